#include "cache/pidgen.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cache/procfile.h"
#include "fs/cleanup.h"

#ifndef PIDFD_THREAD
#define PIDFD_THREAD O_EXCL
#endif

static int source_fd = -1;
static int use_pidfs;

static int pidfd_open_any(pid_t pid, unsigned flags)
{
	return (int)syscall(SYS_pidfd_open, pid, flags);
}

/* pidfs gives each struct pid its own inode number; older kernels give all
 * pidfds one anon inode, which is useless as a generation. */
static int pidfs_usable(void)
{
	struct stat a, b;
	__do_close int fa = pidfd_open_any(getpid(), 0);
	__do_close int fb = pidfd_open_any(getppid(), 0);

	if (fa < 0 || fb < 0 || fstat(fa, &a) || fstat(fb, &b))
		return 0;
	if (a.st_ino == b.st_ino)
		return 0;
	/* Threads need PIDFD_THREAD (6.9+, same release as pidfs). */
	__do_close int ft = pidfd_open_any(getpid(), PIDFD_THREAD);
	return ft >= 0;
}

void pidgen_init(int srcfd, int same_ns)
{
	source_fd = srcfd;
	use_pidfs = same_ns && pidfs_usable();
}

const char *pidgen_method(void)
{
	return use_pidfs ? "pidfs" : "starttime";
}

static int gen_from_pidfd(pid_t pid, uint64_t *gen)
{
	struct stat st;
	__do_close int fd = pidfd_open_any(pid, PIDFD_THREAD);

	if (fd < 0)
		return errno == ESRCH || errno == EINVAL ? -ENOENT : -errno;
	if (fstat(fd, &st))
		return -errno;
	*gen = st.st_ino;
	return 0;
}

/* Field 22 of PID/stat; the command (field 2) may hold spaces and ')' so
 * parse from the last ')'. */
static int gen_from_stat(pid_t pid, uint64_t *gen)
{
	char buf[1024], *p;
	unsigned long long start;

	if (procfile_read(source_fd, pid, "stat", buf, sizeof(buf)) <= 0)
		return -ENOENT;
	p = strrchr(buf, ')');
	if (!p)
		return -ENOENT;
	/* after ") " come fields 3..; starttime is field 22 → skip 19 fields */
	p++;
	for (int field = 3; field < 22; field++) {
		p = strchr(p + 1, ' ');
		if (!p)
			return -ENOENT;
	}
	if (sscanf(p, " %llu", &start) != 1)
		return -ENOENT;
	*gen = start;
	return 0;
}

/* A pidfd polls readable once its task exited. */
static int exited_by_pidfd(pid_t pid)
{
	__do_close int fd = pidfd_open_any(pid, PIDFD_THREAD);
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return fd < 0 || poll(&p, 1, 0) != 0;
}

static int exited_by_stat(pid_t pid)
{
	char buf[512], *p;

	if (procfile_read(source_fd, pid, "stat", buf, sizeof(buf)) <= 0)
		return 1;
	p = strrchr(buf, ')');
	return !p || p[1] != ' ' || p[2] == 'Z' || p[2] == 'X';
}

int pidgen_exited(pid_t pid)
{
	return use_pidfs ? exited_by_pidfd(pid) : exited_by_stat(pid);
}

/* Only a leader has a thread-group pidfd; elsewhere ask its status. */
int pidgen_is_leader(pid_t pid)
{
	if (use_pidfs) {
		__do_close int fd = pidfd_open_any(pid, 0);

		return fd >= 0;
	}
	return procfile_tgid(source_fd, pid) == pid;
}

int pidgen_get(pid_t pid, uint64_t *gen)
{
	return use_pidfs ? gen_from_pidfd(pid, gen) : gen_from_stat(pid, gen);
}

int pidgen_check(pid_t pid, uint64_t gen)
{
	uint64_t now;
	int r = pidgen_get(pid, &now);

	if (r)
		return r;
	return now == gen ? 0 : -ENOENT;
}
