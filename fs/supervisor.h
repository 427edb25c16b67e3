/* Keeping the mount alive while the daemon that serves it restarts. */
#ifndef PROCFAST_SUPERVISOR_H
#define PROCFAST_SUPERVISOR_H

#include <fuse_lowlevel.h>

enum supervisor_role {
	SERVE_FIRST,   /* a server; the kernel's INIT is still to come */
	SERVE_RESUMED, /* a server after another: the connection is set up */
	SUPERVISOR_DONE,
};

/* Called in the process that mounted, before any thread exists. Returns in
 * each server process it starts, and in itself once the mount is over, with
 * *status the exit status. argv: how to execute ourselves again to upgrade;
 * resumed: the connection was set up before (an upgrade). */
enum supervisor_role supervisor_run(struct fuse_session *se, char **argv, int resumed,
				    int *status);

/* After an upgrade: the session fd the previous supervisor handed over, or
 * -1 when this process is to mount. */
int supervisor_resume_fd(void);

/* A server's INIT handler reports the connection set up. */
void supervisor_connection_ready(void);

/* A resumed server hands libfuse the INIT the kernel sent its predecessor. */
void supervisor_replay_init(struct fuse_session *se);

#endif
