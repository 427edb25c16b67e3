#include "fs/supervisor/exec_env.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
