/* fs/lib/fusectl.c with fs/transport/fuse_conn.c: a connection is found and
 * aborted where no fusectl is mounted, as on a host without systemd or in a
 * container whose /sys has none (a mount the supervisor gives up must still
 * end every request it holds).
 *
 * No server: the test mounts a FUSE connection of its own on /dev/fuse,
 * never answered (nothing here sends it a request), in a mount namespace of
 * its own from which fusectl's mount is removed. */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "fs/lib/fusectl.h"
#include "fs/transport/fuse_conn.h"

#define FUSECTL_MOUNTED "/sys/fs/fuse/connections"
#define FUSECTL_SUPER_MAGIC 0x65735543

/* The host's fusectl out of sight: nothing of it at its path. */
static void without_mounted_fusectl(void)
{
	struct statfs sfs;

	assert(unshare(CLONE_NEWNS) == 0);
	assert(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0);
	while (umount2(FUSECTL_MOUNTED, MNT_DETACH) == 0)
		;
	/* whatever is left at the path (sysfs's empty directory, or nothing) */
	assert(statfs(FUSECTL_MOUNTED, &sfs) || sfs.f_type != FUSECTL_SUPER_MAGIC);
}

int main(void)
{
	char dir[] = "/tmp/procfast-fusectl-XXXXXX", opts[128];
	unsigned conn;
	int fd;

	without_mounted_fusectl();
	assert(mkdtemp(dir));
	fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
	assert(fd >= 0);
	snprintf(opts, sizeof(opts), "fd=%d,rootmode=40000,user_id=0,group_id=0", fd);
	assert(mount("procfast-test", dir, "fuse.procfast-test", MS_NOSUID | MS_NODEV, opts) == 0);
	assert(fusectl_dir() >= 0);

	conn = fuse_conn_number(dir);
	assert(conn != 0);
	assert(!fuse_conn_gone(fd));
	fuse_conn_abort(fd, conn);
	assert(fuse_conn_gone(fd)); /* aborted: the kernel says POLLERR on its fd */
	assert(fuse_conn_number("/tmp") == 0); /* no FUSE mount there */

	assert(umount2(dir, MNT_DETACH) == 0);
	close(fd);
	assert(rmdir(dir) == 0);
	printf("connection %u found and aborted with no fusectl mounted\n", conn);
	return 0;
}
