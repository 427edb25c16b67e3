/* fusectl's root, opened once (fusectl.h). */
#include "fs/lib/fusectl.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>
#include <linux/mount.h>
#include <sys/syscall.h>

#define FUSECTL_MOUNTED "/sys/fs/fuse/connections"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int dir = -ENOENT;

static void open_dir(void)
{
	int fs = (int)syscall(SYS_fsopen, "fusectl", FSOPEN_CLOEXEC), mnt = -1;

	if (fs >= 0 && syscall(SYS_fsconfig, fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) == 0)
		mnt = (int)syscall(SYS_fsmount, fs, FSMOUNT_CLOEXEC, 0);
	if (fs >= 0)
		close(fs);
	if (mnt < 0)
		mnt = open(FUSECTL_MOUNTED, O_PATH | O_DIRECTORY | O_CLOEXEC);
	dir = mnt < 0 ? -errno : mnt;
}

int fusectl_dir(void)
{
	pthread_once(&once, open_dir);
	return dir;
}
