/* FUSE over io_uring: the rings that serve a mount once INIT chose them.
 *
 * One queue per possible CPU, as the kernel makes them; it hands a request to
 * the queue of the CPU its caller runs on. Each queue is served by four
 * threads pinned to that CPU, each with its own ring and one entry, so that
 * a request is answered without waking the other vCPU. One entry a thread:
 * a request may block its thread (a notification waits for the directory's
 * lock, held by a lookup that is itself a request), and a second entry of
 * that thread would hold the lookup behind it for ever. Requests go through libfuse as they do from /dev/fuse
 * (fuse_session_process_buf); the reply comes back through the session's
 * writev (transport.c), which hands it here. FORGET and INTERRUPT still come
 * through /dev/fuse, served by libfuse's loop as before. */
#ifndef PROCFAST_URING_H
#define PROCFAST_URING_H

#include <stddef.h>
#include <sys/uio.h>

#include <fuse_lowlevel.h>

#define URING_THREADS_PER_QUEUE 4
#define URING_ENTRIES_PER_THREAD 1
#define URING_SLOTS_PER_QUEUE (URING_THREADS_PER_QUEUE * URING_ENTRIES_PER_THREAD)

/* The number of queues the kernel makes: one per possible CPU. */
unsigned uring_queue_count(void);

/* Starts the ring threads on the session's fd and waits until each has
 * registered its entry (or taken back one a dead server left). mountpoint:
 * where to reach the mount to wake queues whose requests waited while no
 * server ran (resumed), or NULL. 0, or -errno when no queue could start (the
 * kernel then keeps serving through /dev/fuse). */
int uring_start(struct fuse_session *se, const char *mountpoint, int resumed);

/* Whether the calling thread is serving a ring request with this unique id:
 * its reply then goes to uring_reply. */
int uring_owns_reply(unsigned long long unique);
ssize_t uring_reply(const struct iovec *iov, int count);

/* Stops the threads: each answers what the kernel already handed it first. */
void uring_stop(void);

/* How many ring threads serve, 0 when none. */
unsigned uring_serving(void);

#endif
