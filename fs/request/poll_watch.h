/* Pollers waiting on a source file: what lets poll, select and epoll on the
 * mount wait as on procfs (mountinfo's POLLPRI at a mount or unmount, kmsg's
 * POLLIN at a message, sys/kernel/hostname's at a change).
 *
 * The kernel sends POLL with FUSE_POLL_SCHEDULE_NOTIFY when its pollers of a
 * handle must sleep; the server then owes it a notification when the handle
 * may be ready. Here the handle's source fd is registered, one-shot, in one
 * epoll for the events asked; when it fires, the handle's pollers are
 * notified (fuse_lowlevel_notify_poll) and poll again, which arms it again if
 * nothing is ready. One watch a handle: the kernel's pollers of a handle
 * share its notification, so a later POLL's handle replaces the earlier. */
#ifndef PROCFAST_POLL_WATCH_H
#define PROCFAST_POLL_WATCH_H

#include <fuse_lowlevel.h>
#include <stdint.h>

/* A handle's watch, kept in its open file: zero before any. */
struct poll_watch_ref {
	uint32_t slot;
	uint32_t serial; /* 0: none */
};

/* The watcher thread: before requests are served; 0 or -errno. */
int poll_watch_start(void);

/* At the server's stop, once the transport stopped: every poller is
 * notified, so that it polls again and the next server watches for it;
 * then the thread ends. Over io_uring the kernel may hand that poll to a
 * ring the server just closed (the ring's teardown runs later, in a
 * kworker), and ends it with ECANCELED: the poller then sees EPOLLERR once
 * (measured with the fuse_request_end tracepoint). */
void poll_watch_stop(void);

/* Watches fd for events (POLL* bits) until it may be ready, then notifies
 * ph, which it takes. 0, or -errno (fd cannot be watched: EPERM for a file
 * without poll, which procfs never wakes either); ph is then the caller's. */
int poll_watch_arm(struct poll_watch_ref *ref, int fd, uint32_t events,
		   struct fuse_pollhandle *ph);

/* What its watch saw fire since the last call (EPOLL* bits, the POLL*
 * values): a poll of the source made for the watch may have taken it. */
uint32_t poll_watch_take(struct poll_watch_ref *ref);

/* Ends ref's watch, before its fd is closed. */
void poll_watch_drop(struct poll_watch_ref *ref);

#endif
