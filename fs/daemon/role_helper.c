/* The helper's role, -o daemon=: mounts, hands the mount over to the daemon
 * listening there (fs/supervisor/control.c), and leaves it to that daemon. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

#include "fs/daemon/daemon.h"
#include "fs/daemon/source.h"
#include "fs/request/ops.h"
#include "fs/supervisor/control.h"

static int hand_over(struct fuse_session *se, const struct options *o, const char *mountpoint,
		     int argc, char **argv)
{
	char real[PATH_MAX];
	int nsfd = -1, r;

	if (!realpath(mountpoint, real)) {
		fprintf(stderr, "procfast: mount point %s: %s\n", mountpoint, strerror(errno));
		return -1;
	}
	if (o->pidns && (nsfd = source_open_pidns(o->pidns)) < 0)
		return -1;
	if (fuse_session_mount(se, mountpoint)) {
		if (nsfd >= 0)
			close(nsfd);
		return -1;
	}
	r = control_hand_over(o->daemon, fuse_session_fd(se), nsfd, real, argc, argv);
	if (nsfd >= 0)
		close(nsfd);
	if (r) {
		fprintf(stderr, "procfast: daemon=%s: %s\n", o->daemon,
			r == -ENOENT || r == -ECONNREFUSED ? "no procfast daemon listens there"
			: r == -EIO ? "the daemon could not serve this mount (see its log)"
				    : strerror(-r));
		/* unless the daemon did (EINVAL: not a mount any more) */
		if (umount2(real, MNT_DETACH) && errno == EPERM)
			fuse_session_unmount(se);
		return -1;
	}
	return 0;
}

int role_helper(struct daemon *d)
{
	struct fuse_session *se = fuse_session_new(d->args, procfast_ops(),
						   sizeof(struct fuse_lowlevel_ops), NULL);
	int ret = se && !hand_over(se, d->o, d->cmd->mountpoint, d->argc, d->argv) ? 0 : 1;

	if (se)
		fuse_session_destroy(se);
	return ret;
}
