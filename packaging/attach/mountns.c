#include "packaging/attach/mountns.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <unistd.h>

#include "fs/lib/cleanup.h"

int mountns_enter(pid_t pid)
{
	char path[64];
	__do_close int home = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
	__do_close int ns = -1;

	snprintf(path, sizeof(path), "/proc/%d/ns/mnt", (int)pid);
	ns = open(path, O_RDONLY | O_CLOEXEC);
	if (home < 0 || ns < 0)
		return -errno;
	if (setns(ns, CLONE_NEWNS))
		return -errno;
	return move_fd(&home);
}

/* What runs at exit (a sanitizer's checks) expects our own /proc. */
int mountns_leave(int home)
{
	__do_close int fd = home;

	return setns(fd, CLONE_NEWNS) ? -errno : 0;
}
