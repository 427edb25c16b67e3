/* The signal that ends a daemon thread's wait in a system call: a read of
 * /dev/fuse at a stop (fs/transport/drain.c), a request's wait for the
 * kernel's events at its caller's interrupt (fs/request/read_wait.c).
 * Nothing else here uses it, and it is ignored by default; drain_init gives
 * it a handler without SA_RESTART, so that a wait it lands in ends with
 * EINTR. */
#ifndef PROCFAST_WAKE_SIGNAL_H
#define PROCFAST_WAKE_SIGNAL_H

#include <signal.h>

#define WAKE_SIGNAL SIGURG

#endif
