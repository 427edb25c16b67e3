/* FUSE over io_uring: the rings that serve a mount once INIT chose them.
 *
 * One queue per possible CPU, as the kernel makes them; it hands a request to
 * the queue of the CPU its caller runs on. Each queue is served by threads
 * pinned to that CPU (-o uring_threads=, 4 by default), each with its own
 * ring and one entry, so that a request is answered without waking the other
 * vCPU. One entry a thread: a request that blocks its thread (a read of
 * /proc/kmsg waits for a message) holds only its own entry; a second entry of
 * that thread would hold the next request behind it. A request that would
 * wait for the kernel's directory locks, which lookups hold until answered,
 * does so only while its queue keeps another thread free to answer them
 * (uring_begin_wait). Requests go through libfuse as they do from /dev/fuse
 * (fuse_session_process_buf); the reply comes back through the session's
 * writev (transport.c), which hands it here. FORGET and INTERRUPT still come
 * through /dev/fuse, served by libfuse's loop as before. */
#ifndef PROCFAST_URING_H
#define PROCFAST_URING_H

#include <stddef.h>
#include <sys/uio.h>

#include <fuse_lowlevel.h>

#define URING_ENTRIES_PER_THREAD 1

/* The number of queues the kernel makes: one per possible CPU. */
unsigned uring_queue_count(void);

/* Starts per_queue ring threads a queue on the session's fd and waits until
 * each has registered its entry (or taken back one a dead server left); the
 * slots, if reserved before, hold per_queue entries a queue. mountpoint:
 * where to reach the mount to wake queues whose requests waited while no
 * server ran (resumed), or NULL. 0, or -errno when no queue could start (the
 * kernel then keeps serving through /dev/fuse). */
int uring_start(struct fuse_session *se, unsigned per_queue, const char *mountpoint, int resumed);

/* After uring_start: 1 when the kernel counts the idle ring threads as
 * waiting for I/O (procs_blocked, iowait): before Linux 6.15, which lets a
 * wait say it is none (IORING_ENTER_NO_IOWAIT). */
int uring_idle_is_iowait(void);

/* A request about to wait for the kernel (a directory's lock, held by a
 * lookup until it is answered): 1 when it may, and uring_end_wait follows; 0
 * when its thread is the last of its queue not waiting, which that lookup
 * may need. Threads that serve no ring may always. */
int uring_begin_wait(void);
void uring_end_wait(void);

/* Whether the calling thread is serving a ring request with this unique id:
 * its reply then goes to uring_reply. */
int uring_owns_reply(unsigned long long unique);
ssize_t uring_reply(const struct iovec *iov, int count);

/* The queue the calling thread serves, or -1 for a thread that serves no
 * ring (fs/caller/fair.h counts each queue's threads apart). */
int uring_thread_queue(void);

/* Stops the threads: each commits what it served, then waits until the
 * kernel handed its entry a request, which it leaves to the next server in
 * the entry's buffers (a kick hands it one where none comes: uring.c, park). */
void uring_stop(void);

#endif
