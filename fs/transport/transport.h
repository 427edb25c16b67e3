/* How requests reach the server: /dev/fuse reads, or FUSE over io_uring.
 *
 * libfuse reads /dev/fuse as always and decodes every request; the session's
 * custom I/O (fuse_session_custom_io) sees INIT go by and asks the kernel for
 * io_uring in its reply, then starts the rings (uring.c), and routes each
 * reply to where its request came from. -o uring=auto (the default) uses the
 * rings where the kernel offers them, on refuses to mount where it does not,
 * off never asks. */
#ifndef PROCFAST_TRANSPORT_H
#define PROCFAST_TRANSPORT_H

#include <fuse_lowlevel.h>

enum transport_mode { URING_AUTO, URING_ON, URING_OFF };

/* -o uring_threads=: the threads that serve each CPU's queue. */
#define URING_THREADS_DEFAULT 4
#define URING_THREADS_MAX 64

/* From -o uring=; -1 for a name that is none. */
int transport_mode_of(const char *name);

/* Before mounting: -1 with a message printed when uring=on cannot be. */
int transport_preflight(enum transport_mode mode);

/* Before the supervisor forks servers: the rings' buffers, threads entries a
 * queue, which every server of the mount then shares (uring_slots.h), in the
 * memfd rings_fd: the one a server is executed with for a handed-over mount,
 * or that an upgrade or a takeover handed on; -1 for a new one where io_uring
 * is allowed. Returns the memfd (-1: none), which the supervisor holds for
 * the life of the mount and hands on: the next supervisor's servers then
 * find in the slots what the kernel wrote for the last server before. */
int transport_reserve(enum transport_mode mode, unsigned threads, int rings_fd);

/* In a server, before it serves: installs the custom I/O on se, whose rings
 * will have threads threads a queue (as reserved). resumed: the
 * connection's INIT was answered by an earlier server (its rings then start
 * in transport_resume). mountpoint: where the mount is reached. executed: a
 * server the supervisor executed for a handed-over mount; a first one that
 * could not map its mount's shared buffers (which a later server could not
 * take back a dead one's requests from): auto then means /dev/fuse.
 * init_answered: called once the kernel's INIT has its reply (written, not
 * only made: a server stopped in between would leave the kernel an INIT
 * ended with an error, and every later request refused). 0 or -1. */
int transport_attach(struct fuse_session *se, enum transport_mode mode, unsigned threads,
		     const char *mountpoint, int resumed, int executed, void (*init_answered)(void));

/* In a resumed server, once libfuse was given its INIT: starts the rings,
 * taking over what a dead server left in them. */
void transport_resume(void);

/* What serves, for the log: "io_uring, 2 queues x 4 entries" or "/dev/fuse (...)". */
const char *transport_describe(void);

/* For a request about to wait for the kernel's directory locks: 1 when it
 * may (transport_end_wait follows), 0 when its ring queue would be left with
 * no thread free to answer the lookup that holds the lock (uring.h). */
int transport_begin_wait(void);
void transport_end_wait(void);

/* After the loop: stops the rings. */
void transport_detach(void);

#endif
