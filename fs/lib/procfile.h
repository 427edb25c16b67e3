/* Small reads of a process's files (stat, status) in a procfs. */
#ifndef PROCFAST_PROCFILE_H
#define PROCFAST_PROCFILE_H

#include <errno.h>
#include <sys/types.h>

/* A read or pidfd_open failed for want of resources (EMFILE...), not
 * because of the task: nothing is known about the task then. */
static inline int procfile_out_of_resources(int err)
{
	return err == EMFILE || err == ENFILE || err == ENOMEM;
}

/* Reads procfs_fd's "PID/name" into buf, NUL-terminated; its length, or -1. */
ssize_t procfile_read(int procfs_fd, pid_t pid, const char *name, char *buf, size_t len);

/* Reads the task's own "PID/task/PID/name": for a leader, PID/stat is the
 * whole group's (procfs walks every thread for its times), which makes one
 * look at a task cost O(threads); the task's own file has the same state,
 * flags and start time at O(1). */
ssize_t procfile_task_read(int procfs_fd, pid_t pid, const char *name, char *buf, size_t len);

/* Whether the daemon's own thread tid is stopped (ptrace, SIGSTOP): only
 * something outside the daemon resumes it, so a lock it holds is not given
 * back by waiting. */
int procfile_own_thread_stopped(pid_t tid);

/* The "Tgid:" of PID/status, or 0. */
pid_t procfile_tgid(int procfs_fd, pid_t pid);

#endif
