/* A read of a source that waits for the kernel's events (/proc/kmsg waits
 * for the next message: NC_READ_WAITS, name_class.h), ended by its reader's
 * signal as procfs's wait is.
 *
 * The kernel sends INTERRUPT for a request whose caller got a signal, then
 * waits for the answer, uninterruptibly once the server has the request: a
 * reader killed while the daemon waits for it would stay in D until the
 * next kernel message. libfuse calls the request's interrupt function,
 * which wakes the waiting worker (WAKE_SIGNAL), and the read is answered
 * EINTR, as FUSE's servers answer an interrupted request.
 *
 * procfs's read answers ERESTARTSYS instead, which the kernel turns into a
 * restart of the read after a handler with SA_RESTART or after a stop
 * (SIGTSTP, then SIGCONT). A FUSE server cannot: the kernel refuses an
 * answer of ERESTARTSYS (a write of it to /dev/fuse fails with EINVAL,
 * measured on 6.18, and the request is never ended). So a read of kmsg
 * through the mount fails with EINTR where procfs's would go on waiting.
 */
#ifndef PROCFAST_READ_WAIT_H
#define PROCFAST_READ_WAIT_H

#include <fuse_lowlevel.h>
#include <sys/types.h>

/* What ends the waits at the server's stop (fs/transport/drain.h, whose
 * readers of /dev/fuse they join): enter before a wait, with WAKE_SIGNAL
 * blocked (nonzero: the server stops), leave after it; stopping, once
 * woken. A read that waits cannot be handed to the next server, and a stop
 * must not wait for the next kernel message: it is answered EINTR. */
struct read_wait_stop {
	int (*enter)(void);
	void (*leave)(void);
	int (*stopping)(void);
};

/* Once, before requests are served. */
void read_wait_set_stop(const struct read_wait_stop *stop);

/* Reads up to size bytes of fd (open O_NONBLOCK) for req: waits until fd
 * has some unless the reader's read does not wait (nonblock: -EAGAIN).
 * Bytes, or -errno; -EINTR once req was interrupted or the server stops. */
ssize_t read_wait(fuse_req_t req, int fd, char *buf, size_t size, int nonblock);

#endif
