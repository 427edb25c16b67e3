/* A view outlives its unmounting, with its daemon, while anything still
 * holds it: a process outside with a file or working directory in it (the
 * unmount fails with EBUSY, so it is detached lazily), or a copy of the mount
 * in another mount namespace (a container whose namespace has not been torn
 * down yet, a process that entered it). Once the view is unmounted here
 * nothing needs it, so its connection is aborted through the FUSE control
 * filesystem: every remaining user gets ENOTCONN and the daemon ends.
 *
 * The connection is named by the mount's minor device number, which a new
 * FUSE mount may take as soon as ours ends: the abort file is opened while
 * the view is still mounted at our path, and once the connection is gone
 * that open file names nothing (writing to it does nothing). It comes from a
 * detached instance of fusectl (fsopen), so this works where
 * /sys/fs/fuse/connections is not mounted and mounts nothing.
 */
#include "packaging/attach/detach.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

#include "fs/lib/cleanup.h"
#include "fs/lib/fusectl.h"
#include "packaging/attach/mountinfo.h"
#include "packaging/attach/report.h"

struct found {
	const char *view;
	int minor; /* -1: no procfast mount there */
};

static int find_view(const struct mount_entry *e, void *arg)
{
	struct found *f = arg;

	if (!strcmp(e->mount_point, f->view))
		/* the last one mounted there is the one on top */
		f->minor = strcmp(e->fstype, "fuse.procfast") ? -1 : (int)e->minor;
	return 0;
}

/* The connection's abort file, or -errno. */
static int open_abort(int minor)
{
	char name[32];
	int ctl = fusectl_dir(), fd;

	if (ctl < 0)
		return ctl;
	snprintf(name, sizeof(name), "%d/abort", minor);
	fd = openat(ctl, name, O_WRONLY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

static int unmount(const char *view)
{
	if (!umount2(view, UMOUNT_NOFOLLOW))
		return 0;
	if (errno == EBUSY && !umount2(view, UMOUNT_NOFOLLOW | MNT_DETACH))
		return 0;
	return attach_report(view, -errno);
}

int detach_view(const char *view)
{
	struct found f = { .view = view, .minor = -1 };
	__do_close int abort_fd = -1;
	int r = mountinfo_each("/proc/self/mountinfo", find_view, &f);

	if (r)
		return attach_report("/proc/self/mountinfo", r);
	if (f.minor < 0)
		return 0;
	abort_fd = open_abort(f.minor);
	if (abort_fd < 0) /* no fusectl: a copy elsewhere keeps its daemon */
		attach_report("the FUSE control filesystem", abort_fd);
	r = unmount(view);
	if (!r && abort_fd >= 0 && write(abort_fd, "1", 1) < 0)
		return attach_report("aborting the connection", -errno);
	return r;
}
