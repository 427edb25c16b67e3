#include "fs/lib/procfile.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs/lib/cleanup.h"
#include "fs/lib/proc_fields.h"

static ssize_t read_path(int procfs_fd, const char *path, char *buf, size_t len)
{
	__do_close int fd = openat(procfs_fd, path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0 || (n = read(fd, buf, len - 1)) < 0)
		return -1;
	buf[n] = '\0';
	return n;
}

ssize_t procfile_read(int procfs_fd, pid_t pid, const char *name, char *buf, size_t len)
{
	char path[64];

	snprintf(path, sizeof(path), "%d/%s", pid, name);
	return read_path(procfs_fd, path, buf, len);
}

ssize_t procfile_task_read(int procfs_fd, pid_t pid, const char *name, char *buf, size_t len)
{
	char path[80];

	snprintf(path, sizeof(path), "%d/task/%d/%s", pid, pid, name);
	return read_path(procfs_fd, path, buf, len);
}

int procfile_own_thread_stopped(pid_t tid)
{
	char path[64], buf[512];
	const char *state;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	if (read_path(AT_FDCWD, path, buf, sizeof(buf)) <= 0 || !(state = strrchr(buf, ')')))
		return 0;
	return state[1] == ' ' && (state[2] == 't' || state[2] == 'T');
}

pid_t procfile_tgid(int procfs_fd, pid_t pid)
{
	char buf[1024];

	if (procfile_read(procfs_fd, pid, "status", buf, sizeof(buf)) <= 0)
		return 0;
	return status_tgid(buf);
}
