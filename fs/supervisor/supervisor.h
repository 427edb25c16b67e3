/* Keeping the mount alive while the daemon that serves it restarts. */
#ifndef PROCFAST_SUPERVISOR_H
#define PROCFAST_SUPERVISOR_H

#include <fuse_lowlevel.h>

struct handover;

enum supervisor_role {
	SERVE_FIRST,   /* a server; the kernel's INIT is still to come */
	SERVE_RESUMED, /* a server after another: the connection is set up */
	SUPERVISOR_DONE,
};

/* Called in the process that mounted, before any thread exists. Returns in
 * each server process of its own mount it starts, and in itself once every
 * mount it holds is over, with *status the exit status. argv: how to execute
 * ourselves again to upgrade; h: what an upgrade handed on (handover.h; its
 * session_fd >= 0: the connection was set up before), whose fds and mounts
 * the supervisor takes; control: the control= socket or -1; unmount_own: ends our own
 * mount while others are still served. */
enum supervisor_role supervisor_run(struct fuse_session *se, char **argv, struct handover *h,
				    int control, void (*unmount_own)(void), int *status);

/* The supervisor returned having handed every mount to a successor
 * (takeover.h): nothing is to be unmounted. */
int supervisor_handed_over(void);

/* In a server of a handed-over mount, executed by the supervisor: its role
 * (SUPERVISOR_DONE in any other process), from what it was handed (h);
 * takes h's INIT report fd and node record, and the log target. */
enum supervisor_role supervisor_serve_role(struct handover *h);

/* In a server: the memfd it reads the node table of the server before from,
 * and leaves its own in when it stops (cache/nodes/node_record.h); -1 if none. */
int supervisor_nodes_fd(void);

/* A server reports the connection set up: the kernel's INIT answered (its
 * reply written, fs/transport/transport.h). */
void supervisor_connection_ready(void);

/* A resumed server hands libfuse the INIT the kernel sent its predecessor. */
void supervisor_replay_init(struct fuse_session *se);

#endif
