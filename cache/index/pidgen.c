#include "cache/index/pidgen.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cache/index/pid_view.h"
#include "cache/index/pidfd_kept.h"
#include "fs/lib/cleanup.h"
#include "fs/lib/kernel_feature.h"
#include "fs/lib/proc_fields.h"
#include "fs/lib/procfile.h"

#ifndef PIDFD_THREAD
#define PIDFD_THREAD O_EXCL
#endif

static int source_fd = -1;
static int use_pidfs;

static int pidfd_open_any(pid_t pid, unsigned flags)
{
	return (int)syscall(SYS_pidfd_open, pid, flags);
}

/* A pidfd of the source's task pid: in a pid view, the pid is translated,
 * and translated again once the pidfd pins the task, so that a pid reused
 * meanwhile outside the view is never taken for the view's. */
static int task_pidfd(pid_t pid, unsigned flags)
{
	pid_t daemon_pid = pid_view_to_daemon(pid);
	int fd;

	if (!daemon_pid) {
		errno = ESRCH;
		return -1;
	}
	fd = pidfd_open_any(daemon_pid, flags);
	if (fd >= 0 && pid_view_active() && pid_view_to_daemon(pid) != daemon_pid) {
		close(fd);
		errno = ESRCH;
		return -1;
	}
	return fd;
}

/* pidfs gives each struct pid its own inode number; older kernels give all
 * pidfds one anon inode, which is useless as a generation. */
static int pidfs_usable(void)
{
	struct stat a, b;

	if (!kernel_feature_allowed(KF_PIDFS))
		return 0;
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
	use_pidfs = (same_ns || pid_view_active()) && pidfs_usable();
}

const char *pidgen_method(void)
{
	return use_pidfs ? "pidfs" : "starttime";
}

/* What one look at a task tells: its generation and whether it exited. */
struct task_state {
	int err; /* 0, or -ENOENT: no such task */
	uint64_t gen;
	int exited;
};

/* One pidfd answers both: its inode is the generation, and it polls
 * readable once the task exited. One of a running task is kept for the
 * next probe (pidfd_kept.h). */
static void probe_pidfd(pid_t pid, struct task_state *ts)
{
	struct stat st;
	struct pollfd p;

	if (pidfd_kept_running(pid, &ts->gen)) {
		ts->err = ts->exited = 0;
		return;
	}
	__do_close int fd = task_pidfd(pid, PIDFD_THREAD);

	p = (struct pollfd){ .fd = fd, .events = POLLIN };
	ts->err = fd < 0 ? (procfile_out_of_resources(errno) ? -errno : -ENOENT) : fstat(fd, &st) ? -ENOENT : 0;
	ts->gen = ts->err ? 0 : st.st_ino;
	ts->exited = ts->err || poll(&p, 1, 0) != 0;
	if (!ts->exited)
		pidfd_kept_put(pid, &fd, ts->gen);
}

/* The state and start time from PID/stat. */
static void probe_stat(pid_t pid, struct task_state *ts)
{
	char buf[1024];

	ts->err = -ENOENT;
	ts->exited = 1;
	if (procfile_task_read(source_fd, pid, "stat", buf, sizeof(buf)) <= 0) {
		if (procfile_out_of_resources(errno))
			ts->err = -errno;
		return;
	}
	if (stat_parse(buf, &ts->exited, &ts->gen) == 0)
		ts->err = 0;
}

/* A request asks about the same task several times (generation, exit);
 * between pidgen_begin() calls the first answer is reused. Threads that
 * never call it (the event listener) always look afresh. */
static __thread struct {
	int active, valid;
	pid_t pid;
	struct task_state ts;
} memo;

void pidgen_begin(void)
{
	memo.active = 1;
	memo.valid = 0;
}

static const struct task_state *probe(pid_t pid)
{
	if (memo.active && memo.valid && memo.pid == pid)
		return &memo.ts;
	if (use_pidfs)
		probe_pidfd(pid, &memo.ts);
	else
		probe_stat(pid, &memo.ts);
	memo.pid = pid;
	memo.valid = memo.active;
	return &memo.ts;
}

int pidgen_exited(pid_t pid)
{
	return probe(pid)->exited;
}

/* The task's flags (field 9 of stat) have PF_EXITING from the start of
 * do_exit; a pidfd polls readable only once exit_notify() ran. Gone is
 * exiting too; out of fds, nothing is known (0). */
#define PF_EXITING 0x4

int pidgen_exiting(pid_t pid)
{
	char buf[1024];
	unsigned long long flags;

	if (procfile_task_read(source_fd, pid, "stat", buf, sizeof(buf)) <= 0)
		return !procfile_out_of_resources(errno);
	if (stat_number(buf, 9, &flags))
		return 0;
	return (flags & PF_EXITING) != 0;
}

/* Only a leader has a thread-group pidfd; elsewhere ask its status. */
int pidgen_is_leader(pid_t pid)
{
	if (use_pidfs) {
		__do_close int fd = task_pidfd(pid, 0);

		/* Not a leader: ESRCH, or ENOENT/EINVAL for a thread. Out of
		 * fds, say leader: the index may hold a false positive for a
		 * while, never lose a process (see tgid_index.h). */
		return fd >= 0 || procfile_out_of_resources(errno);
	}
	return procfile_tgid(source_fd, pid) == pid;
}

pid_t pidgen_group(pid_t pid)
{
	pid_t tgid;

	if (pidgen_is_leader(pid))
		return pid;
	tgid = procfile_tgid(source_fd, pid);
	return tgid > 0 ? tgid : pid;
}

int pidgen_get(pid_t pid, uint64_t *gen)
{
	const struct task_state *ts = probe(pid);

	*gen = ts->gen;
	return ts->err;
}

int pidgen_check(pid_t pid, uint64_t gen)
{
	uint64_t now;
	int r = pidgen_get(pid, &now);

	if (r)
		return r;
	return now == gen ? 0 : -ENOENT;
}
