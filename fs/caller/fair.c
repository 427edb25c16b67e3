/* Each caller's share of the daemon's fds and threads (fair.h). */
#include "fs/caller/fair.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "fs/caller/reader_ns.h"
#include "fs/caller/shares.h"
#include "fs/lib/log.h"

/* Slots: uids and containers holding handles at once; a pool's busy uids
 * are at most its threads. */
#define HANDLE_SLOTS 4096
#define BUSY_SLOTS_MIN 64
#define BUSY_SLOTS_MAX 4096

static struct fair_limits limits;
static struct shares *by_uid, *by_container; /* handles */
static atomic_uint handles_held;             /* all of them */
static struct shares **busy;                 /* [0] /dev/fuse, [1 + q] queue q */
static unsigned pools;
static int (*queue_of_thread)(void);

static unsigned at_least_one(unsigned long v)
{
	return v ? (unsigned)(v < 0xffffffffUL ? v : 0xffffffffUL) : 1;
}

void fair_limits_of(const struct fair_config *c, struct fair_limits *l)
{
	unsigned long fds = c->fd_limit, reserve = fds / FAIR_RESERVE_DIVISOR;

	if (reserve < FAIR_RESERVE_MIN)
		reserve = FAIR_RESERVE_MIN;
	if (reserve > fds / 2)
		reserve = fds / 2;
	l->fd_reserve = (unsigned)(reserve < 0xffffffffUL ? reserve : 0xffffffffUL);
	l->handles = at_least_one(fds - reserve);
	l->handles_per_uid = c->handles_per_uid ? c->handles_per_uid
						: at_least_one(l->handles / FAIR_HANDLES_DIVISOR);
	l->handles_per_container = c->handles_per_container
					   ? c->handles_per_container
					   : at_least_one(l->handles / FAIR_HANDLES_DIVISOR);
	l->busy_per_uid_fuse = c->busy_per_uid ? c->busy_per_uid
					       : at_least_one(c->fuse_workers / FAIR_BUSY_DIVISOR);
	l->busy_per_uid_ring = c->busy_per_uid ? c->busy_per_uid
					       : at_least_one(c->ring_threads - FAIR_RING_KEPT);
}

static unsigned busy_slots(unsigned threads)
{
	unsigned long n = 4UL * threads;

	return n < BUSY_SLOTS_MIN ? BUSY_SLOTS_MIN : n > BUSY_SLOTS_MAX ? BUSY_SLOTS_MAX : (unsigned)n;
}

int fair_init(const struct fair_config *c, int (*queue_of)(void))
{
	unsigned n = 1 + c->ring_queues;
	char rings[64];

	fair_limits_of(c, &limits);
	by_uid = shares_new(HANDLE_SLOTS);
	by_container = shares_new(HANDLE_SLOTS);
	busy = calloc(n, sizeof(*busy));
	for (unsigned p = 0; busy && p < n; p++)
		if (!(busy[p] = shares_new(busy_slots(p ? c->ring_threads : c->fuse_workers))))
			goto fail;
	if (!by_uid || !by_container || !busy)
		goto fail;
	pools = n;
	queue_of_thread = queue_of;
	snprintf(rings, sizeof(rings), ", %u of each io_uring queue's %u threads",
		 limits.busy_per_uid_ring, c->ring_threads);
	log_info("shares: %u handles a uid, %u a container, of %u (fd limit %lu, %u kept for "
		 "the daemon); %u requests in flight a uid of %u /dev/fuse workers%s",
		 limits.handles_per_uid, limits.handles_per_container, limits.handles, c->fd_limit,
		 limits.fd_reserve, limits.busy_per_uid_fuse, c->fuse_workers,
		 c->ring_queues ? rings : "");
	return 0;
fail:
	for (unsigned p = 0; busy && p < n; p++)
		shares_free(busy[p]);
	free(busy);
	shares_free(by_uid);
	shares_free(by_container);
	busy = NULL;
	by_uid = by_container = NULL;
	log_warn("shares: no memory: every caller may take every fd and thread");
	return -ENOMEM;
}

/* One line per kind of refusal every 10 s at most: a hog makes many. */
enum refusal { REFUSED_UID, REFUSED_CONTAINER, REFUSED_ALL, REFUSED_BUSY, REFUSALS };

static void refused(enum refusal kind, unsigned long who, unsigned share)
{
	static atomic_llong last[REFUSALS];
	struct timespec now;
	long long t, before;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
	t = (long long)now.tv_sec + 1; /* never 0: 0 is "never said" */
	before = atomic_load_explicit(&last[kind], memory_order_relaxed);
	if ((before && t - before < 10) || !atomic_compare_exchange_strong(&last[kind], &before, t))
		return;
	switch (kind) {
	case REFUSED_UID:
		log_warn("uid %lu holds its share of handles (%u): its opens fail with EMFILE", who,
			 share);
		break;
	case REFUSED_CONTAINER:
		log_warn("the container of namespace %lu holds its share of handles (%u): its opens "
			 "fail with EMFILE", who, share);
		break;
	case REFUSED_ALL:
		log_warn("all the handles the daemon may hold are open (%u): opens fail with EMFILE",
			 share);
		break;
	default:
		log_warn("uid %lu has its share of threads busy (%u): its requests fail with EINTR",
			 who, share);
	}
}

/* The caller's container: its user namespace where that is not the daemon's,
 * else its pid namespace where that is not the daemon's; 0 for the host's
 * callers, and one gone already. Namespace inodes are 32-bit (proc_alloc_inum),
 * of one numbering for every kind. */
static uint32_t container_of(pid_t tid)
{
	unsigned long ino;

	if (tid <= 0)
		return 0;
	ino = reader_ns_of(tid, RNS_USER);
	if (ino && !reader_ns_is_daemons(RNS_USER, ino))
		return (uint32_t)ino;
	ino = reader_ns_of(tid, RNS_PID);
	if (ino && !reader_ns_is_daemons(RNS_PID, ino))
		return (uint32_t)ino;
	return 0;
}

static int take_one_handle(void)
{
	unsigned n = atomic_load_explicit(&handles_held, memory_order_relaxed);

	do {
		if (n >= limits.handles)
			return 0;
	} while (!atomic_compare_exchange_weak(&handles_held, &n, n + 1));
	return 1;
}

int fair_handle_take(fuse_req_t req, struct fair_hold *h)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	uint32_t container;

	h->uid = h->container = -1;
	h->counted = 0;
	if (!by_uid)
		return 0;
	if (!take_one_handle()) {
		refused(REFUSED_ALL, 0, limits.handles);
		return -EMFILE;
	}
	h->counted = 1;
	/* untracked (the table is full around it): the other shares still hold */
	if ((h->uid = shares_take(by_uid, ctx->uid, limits.handles_per_uid)) == SHARES_FULL) {
		refused(REFUSED_UID, ctx->uid, limits.handles_per_uid);
		fair_handle_release(h);
		return -EMFILE;
	}
	if ((container = container_of(ctx->pid)) &&
	    (h->container = shares_take(by_container, container, limits.handles_per_container)) ==
		    SHARES_FULL) {
		refused(REFUSED_CONTAINER, container, limits.handles_per_container);
		fair_handle_release(h);
		return -EMFILE;
	}
	return 0;
}

void fair_handle_release(struct fair_hold *h)
{
	if (!h->counted)
		return;
	if (h->uid >= 0)
		shares_release(by_uid, h->uid);
	if (h->container >= 0)
		shares_release(by_container, h->container);
	atomic_fetch_sub(&handles_held, 1);
	h->uid = h->container = -1;
	h->counted = 0;
}

/* ---------------------------------------------------------------- busy threads */

/* The request this thread serves, until its reply goes (fair_replying). */
static __thread struct fair_busy *serving;

int fair_busy_begin(fuse_req_t req, struct fair_busy *b)
{
	int q = queue_of_thread ? queue_of_thread() : -1;
	unsigned p = q >= 0 && (unsigned)q + 1 < pools ? (unsigned)q + 1 : 0;
	unsigned share = p ? limits.busy_per_uid_ring : limits.busy_per_uid_fuse;
	uid_t uid;

	b->pool = NULL;
	if (!pools)
		return 1;
	uid = fuse_req_ctx(req)->uid;
	b->ticket = shares_take(busy[p], uid, share);
	if (b->ticket == SHARES_FULL) {
		refused(REFUSED_BUSY, uid, share);
		fuse_reply_err(req, FAIR_REFUSED);
		return 0;
	}
	if (b->ticket >= 0) {
		b->pool = busy[p];
		serving = b;
	}
	return 1;
}

void fair_replying(void)
{
	struct fair_busy *b = serving;

	if (!b)
		return;
	serving = NULL;
	shares_release(b->pool, b->ticket);
	b->pool = NULL;
}

void fair_busy_end(struct fair_busy *b)
{
	if (b->pool)
		fair_replying();
}
