#include "fs/supervisor/exec_env.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int exec_env_pass_fd(const char *name, int fd)
{
	char v[16];

	snprintf(v, sizeof(v), "%d", fd);
	return fcntl(fd, F_SETFD, 0) || setenv(name, v, 1) ? -1 : 0;
}

int exec_env_take_fd(const char *name)
{
	const char *v = getenv(name);
	int fd = v ? atoi(v) : -1;

	unsetenv(name);
	return fd >= 0 && fcntl(fd, F_SETFD, FD_CLOEXEC) == 0 ? fd : -1;
}

int self_exe(char *buf, size_t len)
{
	ssize_t n = readlink("/proc/self/exe", buf, len - 1);
	char *deleted;

	if (n <= 0)
		return -errno;
	buf[n] = '\0';
	/* Replaced by a package upgrade: the new file is at the old path. */
	if ((deleted = strstr(buf, " (deleted)")) && !deleted[10])
		*deleted = '\0';
	return 0;
}
