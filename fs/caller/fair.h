/* Each caller's share of the daemon (issue 21): of its file descriptors and
 * of its threads, so that one user cannot take all of either.
 *
 * Handles: every open file and open directory but the root holds a source fd
 * (fs/request/file.c, dir.c), or a helper's (ns_helper.h), for as long as the
 * kernel holds it open. They are counted by the request's uid and by the
 * caller's container, and all together: an open past the uid's share, its
 * container's or the daemon's fd limit less a reserve the daemon keeps for
 * itself (its own work opens files: callers' status, namespaces, pidfds,
 * rings) fails with EMFILE, for that caller only. A container is the
 * caller's user namespace where that is not the daemon's (a container with
 * one maps its own uids: its users are its own), else its pid namespace
 * where that is not the daemon's (a container without one shares the host's
 * uids, its root is the host's uid 0: only its processes tell it apart);
 * callers in both of the daemon's own namespaces (the host's) are counted by
 * uid only.
 *
 * Threads: a request takes one of the threads that serve (libfuse's workers
 * over /dev/fuse, up to max_threads; over io_uring the threads of the queue
 * of the CPU it was made on) until it is answered, which a read that waits
 * (of /proc/kmsg, say) may hold for ever. A uid with its share of a pool's
 * threads busy gets FAIR_REFUSED (EINTR) at once for any further request
 * that pool takes, and the others still find threads free. Counted where
 * every request begins (fair_guard_ops), by uid and pool, without a lock
 * (fs/caller/shares.h).
 * FORGET, RELEASE and RELEASEDIR are never refused: the kernel sends them
 * once and they never wait. Nor is POLL, which never waits either: a
 * refused one would be EPOLLERR to its poller (fs/request/poll.c).
 */
#ifndef PROCFAST_FAIR_H
#define PROCFAST_FAIR_H

#include <errno.h>

#include <fuse_lowlevel.h>

/* What the shares are made from; 0 for a share: its default. */
struct shares;

struct fair_config {
	unsigned long fd_limit;         /* the daemon's RLIMIT_NOFILE (soft) */
	unsigned handles_per_uid;       /* -o max_handles_per_uid= */
	unsigned handles_per_container; /* -o max_handles_per_container= */
	unsigned busy_per_uid;          /* -o max_busy_per_uid=, of each pool */
	unsigned fuse_workers;          /* /dev/fuse: libfuse's max_threads (1 with -s) */
	unsigned ring_queues;           /* io_uring: the queues (0: never) */
	unsigned ring_threads;          /* and the threads that serve each */
};

/* The defaults: the daemon keeps max(256, fd_limit / 16) fds for itself
 * (at most half), handles may use the rest; a uid, and a container, a
 * quarter of that. A uid may have half of libfuse's workers busy, and all
 * but one of the threads of a CPU's io_uring queue (at least one): a queue
 * has few (uring_threads=, 4 by default), the kernel hands a queue only its
 * CPU's requests and never another's (one made on a CPU whose queue's
 * threads all wait, waits with them), and half of 4 refused 8 threads of one
 * uid reading at once on 2 CPUs (tests/lifecycle/test_faults.py), where all
 * but one still leaves every queue a thread for everyone else. */
#define FAIR_RESERVE_MIN 256
#define FAIR_RESERVE_DIVISOR 16
#define FAIR_HANDLES_DIVISOR 4
#define FAIR_BUSY_DIVISOR 2
#define FAIR_RING_KEPT 1

/* The refusal past a share of threads. Not EAGAIN: a FUSE file accepts
 * epoll (fuse_file_poll), Go registers every file it opens with its poller,
 * and a read that ends with EAGAIN waits for a readiness event that FUSE
 * sends only on a server's poll notification: node_exporter hung for ever
 * (tests/tools/test_node_exporter.py). Answering poll would cost every open
 * of a Go program a round trip. EINTR is an error every caller may get from
 * a read of a FUSE file (a signal during the request), and Go, Python
 * (PEP 475), Rust's read_to_end and BusyBox make the call again: they
 * wait, by asking, until their share frees; a C tool that does not retry
 * sees the call fail, as it did with EAGAIN. */
#define FAIR_REFUSED EINTR

/* The shares in effect. */
struct fair_limits {
	unsigned fd_reserve;            /* fds left to the daemon's own work */
	unsigned handles;               /* all handles */
	unsigned handles_per_uid;
	unsigned handles_per_container;
	unsigned busy_per_uid_fuse;     /* of libfuse's workers */
	unsigned busy_per_uid_ring;     /* of each io_uring queue's threads */
};

/* The shares c gives (pure: fuzzed and tested without a mount). */
void fair_limits_of(const struct fair_config *c, struct fair_limits *l);

/* Sets the shares up, before any request; queue_of tells the io_uring
 * queue a thread serves (-1: none, a /dev/fuse worker). Logs them. 0, or
 * -ENOMEM (then nothing is counted). */
int fair_init(const struct fair_config *c, int (*queue_of)(void));

/* A request counted among its uid's busy ones (request.h begins each). */
struct fair_busy {
	struct shares *pool; /* NULL: not counted, or not any more */
	int ticket;
};

/* 1: the request may go on, and fair_busy_end follows; 0: it was answered
 * FAIR_REFUSED, its uid having its share of the pool's threads busy. */
int fair_busy_begin(fuse_req_t req, struct fair_busy *b);
/* Its end, where no reply went (none is sent for some, or it failed). */
void fair_busy_end(struct fair_busy *b);

/* A reply is about to go to the kernel: the request the calling thread
 * serves stops counting now, not after its reply was written, when its
 * caller may have made its next request already (a single-threaded caller
 * would find its share taken by the one answered). From the session's
 * writev. */
void fair_replying(void);

/* A handle's place in the counts. */
struct fair_hold {
	int uid;       /* tickets (shares.h), or < 0: not counted there */
	int container;
	int counted;   /* in the daemon's total */
};

/* Before a source open for req's caller: 0 (h counts the handle until
 * fair_handle_release), or -EMFILE past a share. */
int fair_handle_take(fuse_req_t req, struct fair_hold *h);
/* Gives back what h holds (nothing for a zeroed-out or refused h). */
void fair_handle_release(struct fair_hold *h);

#endif
