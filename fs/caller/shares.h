/* Shares: counters by key in a fixed table, each held under a limit.
 *
 * What fs/caller/fair.c counts for each caller: the handles of each uid and of
 * each container, the requests of each uid in flight in a pool of threads. A
 * take for a key succeeds while that key holds fewer than the limit, and
 * gives a ticket that its release hands back.
 *
 * A key's take and release are one compare-and-swap on its slot, without
 * lock, once the key has a slot; only a key's first take (or its first
 * after its slot went to another key) claims a slot, under the table's
 * mutex, which nothing else takes. Each slot is one 64-bit word: the key, a
 * bit "keyed" and the count, so that a take sees the key and its count
 * together. A key is in at most one slot, within SHARES_WINDOW slots of its
 * hash: it gets one only under the mutex, after a look at its whole window
 * found it in none. A keyed slot whose count fell to 0 keeps its key, for
 * that key's next take without the mutex, until a claim for another key takes
 * it over. A key whose window has no slot with a count of 0 (as many other
 * keys holding something as the window has slots) cannot be counted: its take
 * says so (SHARES_UNTRACKED) and the caller decides. A share shared by such
 * keys would not do: a key counted there, then in a slot of its own, would
 * hold its limit twice.
 */
#ifndef PROCFAST_SHARES_H
#define PROCFAST_SHARES_H

#include <stdint.h>

#define SHARES_WINDOW 32
/* The most a key can hold, whatever the limit asked. */
#define SHARES_COUNT_MAX 0x7fffffffu

struct shares;

/* A table of at least slots slots (rounded up to a power of two, at least
 * 8, at most 2^24), or NULL when memory is short. */
struct shares *shares_new(unsigned slots);
void shares_free(struct shares *s);

#define SHARES_FULL (-1)      /* key holds limit already */
#define SHARES_UNTRACKED (-2) /* no slot for key: nothing was taken */

/* One more for key, if it holds fewer than limit: its ticket (>= 0), or
 * SHARES_FULL or SHARES_UNTRACKED. */
int shares_take(struct shares *s, uint32_t key, uint32_t limit);

/* Gives back what a take returned, once. */
void shares_release(struct shares *s, int ticket);

/* For tests and fuzzing: what key holds, what all keys hold, and whether
 * key's window has a slot that key could be counted in. */
uint32_t shares_held(struct shares *s, uint32_t key);
uint64_t shares_total(struct shares *s);
int shares_room_for(struct shares *s, uint32_t key);

#endif
