/* A server's stop that loses no request.
 *
 * libfuse ends its loop at once on SIGTERM: a worker whose read of
 * /dev/fuse completes after that drops the request it took, and the kernel
 * then ends it with ECONNABORTED when the worker's clone fd closes: a
 * reader of the mount sees an error at every upgrade, restart by signal or
 * hand-over to a successor (takeover.h). Here SIGTERM, SIGINT and SIGHUP
 * first close the door instead: no read starts any more, the reads under
 * way are interrupted, those that took a request finish it, and only then
 * does the session end. Requests not yet taken stay in the kernel's queue
 * for the next server.
 *
 * Before the door closes, whatever may wait for the kernel's directory locks
 * (a notification written while a lookup holds the lock: the lookup waits
 * for an answer) is ended while requests are still answered: the notifier
 * (quiesce), and requests' own waits, which are refused from then on. */
#ifndef PROCFAST_DRAIN_H
#define PROCFAST_DRAIN_H

#include <fuse_lowlevel.h>

/* In a server, after fuse_set_signal_handlers: takes its stop signals over;
 * quiesce ends what writes notifications on its own. 0, or -errno. */
int drain_init(struct fuse_session *se, void (*quiesce)(void));

/* At the server's stop, once its loop ended and before the session is
 * destroyed: ends the drainer, and a drain under way without its waits. */
void drain_stop(void);

/* Around a request's wait for the kernel's locks (invalidate.h's guard):
 * 0 once the server stops (the request must not wait), else 1 and
 * drain_wait_end after. */
int drain_wait_begin(void);
void drain_wait_end(void);

/* Around each read of the session's fds (transport.c), and each request's
 * wait for the kernel's events (fs/request/read_wait.h): 0 to read, -1
 * with errno EINTR once the server stops; drain_read_end after a read. A
 * read under way when the server stops is woken by WAKE_SIGNAL, and
 * drain_stopping tells it why. */
int drain_read_begin(void);
void drain_read_end(void);
int drain_stopping(void);

/* Around a request from its read of /dev/fuse to the thread's next read (or
 * its end): begun before drain_read_end, ended before the next
 * drain_read_begin. The session ends once no thread holds one. */
void drain_taken_begin(void);
void drain_taken_end(void);

#endif
