/* Counters by key under a limit (shares.h). */
#include "fs/caller/shares.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

/* A slot's word: key << 32 | KEYED | count. 0: never keyed. */
#define KEYED ((uint64_t)1 << 31)
#define COUNT_MASK ((uint64_t)SHARES_COUNT_MAX)
#define WORD(key, count) ((uint64_t)(key) << 32 | KEYED | (uint64_t)(count))
#define SLOTS_MAX (1u << 24)

struct shares {
	unsigned mask;   /* slots - 1 */
	unsigned window; /* slots a key may be in, from its hash on */
	pthread_mutex_t claim;
	_Atomic uint64_t slot[]; /* mask + 1 */
};

struct shares *shares_new(unsigned slots)
{
	unsigned n = 8;
	struct shares *s;

	while (n < slots && n < SLOTS_MAX)
		n <<= 1;
	s = malloc(sizeof(*s) + (size_t)n * sizeof(s->slot[0]));
	if (!s)
		return NULL;
	s->mask = n - 1;
	s->window = n < SHARES_WINDOW ? n : SHARES_WINDOW;
	pthread_mutex_init(&s->claim, NULL);
	for (unsigned i = 0; i < n; i++)
		atomic_init(&s->slot[i], 0);
	return s;
}

void shares_free(struct shares *s)
{
	if (!s)
		return;
	pthread_mutex_destroy(&s->claim);
	free(s);
}

static unsigned home(const struct shares *s, uint32_t key)
{
	return (unsigned)(((uint64_t)key * 0x9e3779b97f4a7c15ull) >> 32) & s->mask;
}

static int is_keys(uint64_t w, uint32_t key)
{
	return (w & KEYED) && (uint32_t)(w >> 32) == key;
}

/* The slot that has key, or -1. Keys change only under the mutex, so a look
 * without it misses a key only as it is being claimed or given up. */
static int find(struct shares *s, uint32_t key)
{
	unsigned h = home(s, key);

	for (unsigned k = 0; k < s->window; k++) {
		unsigned i = (h + k) & s->mask;

		if (is_keys(atomic_load_explicit(&s->slot[i], memory_order_relaxed), key))
			return (int)i;
	}
	return -1;
}

/* One more on slot i while it is key's: 1 taken, 0 at the limit, -1 no
 * longer key's. */
static int take_at(struct shares *s, unsigned i, uint32_t key, uint32_t limit)
{
	uint64_t w = atomic_load_explicit(&s->slot[i], memory_order_relaxed);

	for (;;) {
		if (!is_keys(w, key))
			return -1;
		if ((w & COUNT_MASK) >= limit)
			return 0;
		if (atomic_compare_exchange_weak_explicit(&s->slot[i], &w, w + 1, memory_order_acq_rel,
							  memory_order_relaxed))
			return 1;
	}
}

/* A free slot of key's window: one never keyed first (a slot that keeps its
 * key lets that key in without the mutex), else one whose count is 0; -1
 * when every one holds something. */
static int free_slot(struct shares *s, uint32_t key, uint64_t *seen)
{
	unsigned h = home(s, key);
	int given_up = -1;

	for (unsigned k = 0; k < s->window; k++) {
		unsigned i = (h + k) & s->mask;
		uint64_t w = atomic_load_explicit(&s->slot[i], memory_order_relaxed);

		if (!w) {
			*seen = w;
			return (int)i;
		}
		if (!(w & COUNT_MASK) && given_up < 0) {
			given_up = (int)i;
			*seen = w;
		}
	}
	return given_up;
}

/* Under the mutex: key's slot, claimed meanwhile or now. */
static int claim(struct shares *s, uint32_t key, uint32_t limit)
{
	for (;;) {
		uint64_t seen = 0;
		int i = find(s, key), r;

		if (i >= 0) {
			if ((r = take_at(s, (unsigned)i, key, limit)) >= 0)
				return r ? i : SHARES_FULL;
			continue; /* never: only a claim takes a key away */
		}
		if (!limit)
			return SHARES_FULL;
		if ((i = free_slot(s, key, &seen)) < 0)
			return SHARES_UNTRACKED;
		/* fails when that slot's own key took it again first */
		if (atomic_compare_exchange_strong_explicit(&s->slot[i], &seen, WORD(key, 1),
							    memory_order_acq_rel, memory_order_relaxed))
			return i;
	}
}

int shares_take(struct shares *s, uint32_t key, uint32_t limit)
{
	int i, r;

	if (limit > SHARES_COUNT_MAX)
		limit = SHARES_COUNT_MAX;
	while ((i = find(s, key)) >= 0)
		if ((r = take_at(s, (unsigned)i, key, limit)) >= 0)
			return r ? i : SHARES_FULL;
	pthread_mutex_lock(&s->claim);
	r = claim(s, key, limit);
	pthread_mutex_unlock(&s->claim);
	return r;
}

void shares_release(struct shares *s, int ticket)
{
	_Atomic uint64_t *slot;
	uint64_t w;

	if (ticket < 0 || (unsigned)ticket > s->mask)
		return;
	slot = &s->slot[ticket];
	w = atomic_load_explicit(slot, memory_order_relaxed);
	/* never below 0, whatever a caller did wrong */
	while ((w & COUNT_MASK) &&
	       !atomic_compare_exchange_weak_explicit(slot, &w, w - 1, memory_order_acq_rel,
						      memory_order_relaxed))
		;
}

uint32_t shares_held(struct shares *s, uint32_t key)
{
	int i = find(s, key);

	return i < 0 ? 0 : (uint32_t)(atomic_load(&s->slot[i]) & COUNT_MASK);
}

uint64_t shares_total(struct shares *s)
{
	uint64_t sum = 0;

	for (unsigned i = 0; i <= s->mask; i++)
		sum += atomic_load(&s->slot[i]) & COUNT_MASK;
	return sum;
}

int shares_room_for(struct shares *s, uint32_t key)
{
	uint64_t seen;

	return find(s, key) >= 0 || free_slot(s, key, &seen) >= 0;
}
