/* Keeping the mount alive while the daemon that serves it restarts. */
#ifndef PROCFAST_SUPERVISOR_H
#define PROCFAST_SUPERVISOR_H

#include <fuse_lowlevel.h>

enum supervisor_role {
	SERVE_FIRST,   /* a server; the kernel's INIT is still to come */
	SERVE_RESUMED, /* a server after another: the connection is set up */
	SUPERVISOR_DONE,
};

/* What a supervisor tells the processes it executes (upgrades, servers of
 * handed-over mounts), in the environment. */
#define RESUME_ENV "PROCFAST_RESUME_FD"     /* the session fd to serve or supervise */
#define SERVE_ENV "PROCFAST_SERVE"          /* serve only: "first" or "resumed" */
#define PIDNS_FD_ENV "PROCFAST_PIDNS_FD"    /* pidns= as an open file */
#define READY_FD_ENV "PROCFAST_READY_FD"    /* where to say INIT was answered */
#define LOG_ENV "PROCFAST_LOG"              /* "syslog" when the supervisor logs there */
#define JOINED_FD_ENV "PROCFAST_JOINED_FD"  /* upgrade: the handed-over mounts (mount_slot.c) */
#define CONTROL_FD_ENV "PROCFAST_CONTROL_FD" /* upgrade: the control= socket */

/* Leaves fd open across execve, named in the environment as name (read back
 * by supervisor_resume_fd and the like). 0, or -1 with errno. */
int supervisor_pass_fd(const char *name, int fd);

/* Called in the process that mounted, before any thread exists. Returns in
 * each server process of its own mount it starts, and in itself once every
 * mount it holds is over, with *status the exit status. argv: how to execute
 * ourselves again to upgrade; resumed: the connection was set up before (an
 * upgrade); control: the control= socket or -1; unmount_own: ends our own
 * mount while others are still served. */
enum supervisor_role supervisor_run(struct fuse_session *se, char **argv, int resumed,
				    int control, void (*unmount_own)(void), int *status);

/* After an upgrade, or in a server of a handed-over mount: the session fd,
 * or -1 when this process is to mount. */
int supervisor_resume_fd(void);

/* In a server of a handed-over mount, executed by the supervisor: its role
 * (SUPERVISOR_DONE in any other process), and the pidns= file it was handed
 * (or -1). Also takes the INIT report fd and the log target. */
enum supervisor_role supervisor_serve_role(int *pidns_fd);

/* A server's INIT handler reports the connection set up. */
void supervisor_connection_ready(void);

/* A resumed server hands libfuse the INIT the kernel sent its predecessor. */
void supervisor_replay_init(struct fuse_session *se);

#endif
