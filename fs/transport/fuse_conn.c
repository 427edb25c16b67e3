/* Aborting a FUSE connection through fusectl.
 *
 * Closing the last /dev/fuse fd of a connection aborts it, which ends every
 * request it holds. Over io_uring that is not sure: the kernel can keep such a
 * connection up after every process closed it. Measured: in 1 of 16 mounts
 * given up beside a CPU hog, three callers and a queue kick waited in
 * request_wait_answer for good, no process held /dev/fuse, and writing to the
 * connection's abort file freed them at once. So a mount that procfast gives
 * up is aborted explicitly, while its number is sure to be its own: the
 * number is the mount's anonymous device, free for another mount once the
 * superblock is gone, and while the connection is up the superblock is. */
#include "fs/transport/fuse_conn.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs/lib/cleanup.h"
#include "fs/lib/fusectl.h"
#include "fs/lib/log.h"

/* The kernel says POLLERR on a session fd once its connection is over. */
int fuse_conn_gone(int fd)
{
	struct pollfd p = { .fd = fd, .events = 0 };

	return poll(&p, 1, 0) == 1 && (p.revents & POLLERR);
}

unsigned fuse_conn_number(const char *path)
{
	struct statx stx;
	char name[16];
	int ctl = fusectl_dir();

	/* no attribute asked: FUSE answers from the inode, with no request */
	if (statx(AT_FDCWD, path, AT_STATX_DONT_SYNC | AT_NO_AUTOMOUNT, 0, &stx) ||
	    stx.stx_dev_major != 0) /* FUSE's devices are anonymous */
		return 0;
	/* only a FUSE connection has a directory there */
	snprintf(name, sizeof(name), "%u", stx.stx_dev_minor);
	return ctl >= 0 && faccessat(ctl, name, F_OK, 0) == 0
		       ? stx.stx_dev_minor : 0;
}

/* The abort file is opened before the connection is seen to be up: a
 * connection is never up again once it went down, so the file opened is then
 * its own, and a write to it after the connection ended does nothing. */
void fuse_conn_abort(int fd, unsigned conn)
{
	char path[64];
	int ctl = fusectl_dir(), err;
	__do_close int a = -1;

	if (!conn)
		return;
	snprintf(path, sizeof(path), "%u/abort", conn);
	a = ctl < 0 ? -1 : openat(ctl, path, O_WRONLY | O_CLOEXEC);
	err = ctl < 0 ? -ctl : a < 0 ? errno : 0;
	if (fuse_conn_gone(fd))
		return;
	if (!err && write(a, "1", 1) != 1)
		err = errno;
	if (err)
		log_warn("cannot abort FUSE connection %u: %s", conn, strerror(err));
	else
		log_info("aborted FUSE connection %u: every request it held ends", conn);
}
