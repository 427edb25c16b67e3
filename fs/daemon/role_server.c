/* The role of a server a supervisor executed for a handed-over mount
 * (slot_server_start, fs/supervisor/slot_server.c): told by the hand-over record to serve its
 * session fd, with its pidns= file and ring buffers; the mount is the
 * supervisor's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs/daemon/daemon.h"
#include "fs/daemon/privileges.h"

/* pidns= is the file it was handed. */
static int take_handed_pidns(struct options *o, int nsfd)
{
	char path[32];

	if (nsfd < 0)
		return 0;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", nsfd);
	free(o->pidns);
	return (o->pidns = strdup(path)) ? 0 : -1;
}

int role_server(struct daemon *d)
{
	size_t started;
	int ret = 1;

	free(d->o->daemon);
	d->o->daemon = NULL;
	d->cmd->foreground = 1;
	if (take_handed_pidns(d->o, d->handed->pidns_fd))
		return 1;
	started = holding_start(d);
	d->role = d->serve;
	if (started == HOLDING_STEPS) {
		d->leave_mount = !d->o->no_restart;
		if (!privileges_seal())
			ret = server_run(d->se, d->cmd, d->o, d->role, 1);
	}
	holding_stop(d, started);
	return ret;
}
