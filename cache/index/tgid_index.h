/* The marked TGID index: which pids are (probably) thread-group leaders.
 *
 * The userspace twin of the kernel patch's TGID mark (seeds/003): a bit per
 * pid, set when a new leader forks, so listing the processes costs what the
 * number of processes dictates, not the number of threads. Same rule as the
 * patch: false positives are allowed and filtered before listing, false
 * negatives never.
 *
 * A leader that exits is not unmarked at once: it may stay a zombie, or its
 * other threads may live on, and /proc lists it meanwhile. It becomes
 * "exited" instead, and an exited pid is listed only while the source still
 * has it; the writer unmarks it once the source has not.
 *
 * Writers: one thread at a time (the event listener or a lister applying
 * events, both under proc_events.c's index lock, or a scan holding the
 * fallback lock). Readers: any thread, no lock.
 */
#ifndef PROCFAST_TGID_INDEX_H
#define PROCFAST_TGID_INDEX_H

#include <stdint.h>
#include <sys/types.h>

/* srcfd: the source procfs root. */
void tgid_index_init(int srcfd);

/* Writer side. */
void tgid_index_mark(pid_t tgid);      /* also clears "exited" (exec) */
void tgid_index_exited(pid_t tgid);
int tgid_index_resync(void);           /* one scan of the source root */
/* Unmarks exited pids the source no longer has, at most max of them from
 * pid `from` on; returns the pid to go on from, or -1 at the end. */
int64_t tgid_index_sweep(uint32_t from, unsigned max);

/* Reader side. The first listable leader >= from, or -1. */
int64_t tgid_index_next(uint32_t from);
/* Marked and not exited: its name can be cached until its exit event. */
int tgid_index_live_leader(pid_t pid);

/* Fallback mode (no process events): the index is a scan that expires
 * after lifetime_ms; readers call tgid_index_refresh() before listing. */
void tgid_index_set_fallback(unsigned lifetime_ms);
void tgid_index_refresh(void);

#endif
