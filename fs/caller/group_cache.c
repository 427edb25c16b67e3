#include "fs/caller/group_cache.h"

#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "fs/lib/clock.h"

#define SLOTS 1024
#define SLOT_GROUPS 32 /* callers with more are read every time */

/* One writer at a time per slot (odd seq = being written); readers copy
 * and retry if the sequence moved, so lookups never block. */
struct slot {
	_Atomic unsigned seq;
	pid_t tid, tgid;
	uid_t uid, euid;
	gid_t gid, egid;
	int foreign_user;
	uint64_t expires_ns;
	int ngroups;
	gid_t groups[SLOT_GROUPS];
};

static struct slot slots[SLOTS];

/* coarse: asked at every request, and a second's precision is plenty */
static uint64_t coarse_now_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC_COARSE);
}

int group_cache_get(struct caller *c)
{
	struct slot *s = &slots[(unsigned)c->tid % SLOTS];
	unsigned seq;
	int hit;

	do {
		seq = atomic_load_explicit(&s->seq, memory_order_acquire);
		if (seq & 1)
			return -1;
		hit = s->tid == c->tid && s->uid == c->uid && s->gid == c->gid &&
		      s->expires_ns > coarse_now_ns();
		if (hit) {
			c->tgid = s->tgid;
			c->euid = s->euid;
			c->foreign_user = s->foreign_user;
			c->egid = s->egid;
			c->ngroups = s->ngroups;
			memcpy(c->groups, s->groups, sizeof(gid_t) * (size_t)s->ngroups);
		}
		atomic_thread_fence(memory_order_acquire);
	} while (atomic_load_explicit(&s->seq, memory_order_relaxed) != seq);
	return hit ? 0 : -1;
}

void group_cache_put(const struct caller *c)
{
	struct slot *s = &slots[(unsigned)c->tid % SLOTS];
	unsigned seq = atomic_load_explicit(&s->seq, memory_order_relaxed);

	if (c->ngroups > SLOT_GROUPS || (seq & 1) ||
	    !atomic_compare_exchange_strong(&s->seq, &seq, seq + 1))
		return; /* someone else is writing it: skip, it is only a cache */
	s->tid = c->tid;
	s->tgid = c->tgid;
	s->uid = c->uid;
	s->gid = c->gid;
	s->euid = c->euid;
	s->foreign_user = c->foreign_user;
	s->egid = c->egid;
	s->ngroups = c->ngroups;
	memcpy(s->groups, c->groups, sizeof(gid_t) * (size_t)c->ngroups);
	s->expires_ns = coarse_now_ns() + GROUP_CACHE_TTL_MS * 1000000ULL;
	atomic_store_explicit(&s->seq, seq + 2, memory_order_release);
}
