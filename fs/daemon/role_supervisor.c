/* The supervisor's role: mounts (or resumes the mount an upgrade or a
 * takeover handed on), and holds it while the servers it forks serve
 * (fs/supervisor/supervisor.c). In a forked server supervisor_run returns,
 * and the server runs here. */
#include "fs/daemon/daemon.h"
#include "fs/daemon/privileges.h"

int role_supervisor(struct daemon *d)
{
	size_t started = holding_start(d);
	int ret = 1;

	d->role = SERVE_FIRST; /* -o norestart: this process serves */
	if (started == HOLDING_STEPS && !d->o->no_restart)
		d->role = supervisor_run(d->se, d->argv, d->handed, d->control, holding_unmount_own,
					 &ret);
	if (started == HOLDING_STEPS && d->role != SUPERVISOR_DONE) {
		/* a server leaves the mount to its supervisor */
		d->leave_mount = !d->o->no_restart;
		if (!privileges_seal())
			ret = server_run(d->se, d->cmd, d->o, d->role, 0);
	}
	holding_stop(d, started);
	return ret;
}
