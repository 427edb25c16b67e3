/* What main() hands the role it dispatches to: a procfast process is one of
 *  - a supervisor (role_supervisor.c): mounts, or resumes a mount an upgrade
 *    or a takeover handed on, and keeps it while servers it forks serve;
 *  - a server a supervisor executed for a handed-over mount (role_server.c);
 *  - a helper (role_helper.c): mounts with -o daemon= and hands the mount
 *    to the daemon there, or waits with -o takeover as the successor. */
#ifndef PROCFAST_DAEMON_H
#define PROCFAST_DAEMON_H

#include <fuse_lowlevel.h>

#include "fs/daemon/options.h"
#include "fs/supervisor/handover.h"
#include "fs/supervisor/supervisor.h"

struct daemon {
	int argc;
	char **argv;
	struct fuse_args *args;
	struct fuse_cmdline_opts *cmd;
	struct options *o;
	struct handover *handed;    /* what the procfast that executed us passed on */
	enum supervisor_role serve; /* SUPERVISOR_DONE, or an executed server's role */
	/* set by the steps of a process that holds a mount (holding.c) */
	struct fuse_session *se;
	int control;                /* the control= socket we listen on, or -1 */
	enum supervisor_role role;  /* what this process became */
	int leave_mount;            /* a server: the mount is its supervisor's */
};

int role_supervisor(struct daemon *d);
int role_server(struct daemon *d);
int role_helper(struct daemon *d);

/* The steps of a process that holds a mount (holding.c): source, session,
 * mount, control socket, background, privileges, pidfile, ring buffers.
 * holding_start returns how many started (all: HOLDING_STEPS). */
size_t holding_start(struct daemon *d);
void holding_stop(struct daemon *d, size_t started);
extern const size_t HOLDING_STEPS;

/* Our own mount, for the supervisor to end while it serves others. */
void holding_unmount_own(void);

/* A server: the process that answers requests (server.c). 0 or 1, the exit
 * status; executed: a server executed for a handed-over mount. */
int server_run(struct fuse_session *se, struct fuse_cmdline_opts *cmd, const struct options *o,
	       enum supervisor_role role, int executed);

#endif
