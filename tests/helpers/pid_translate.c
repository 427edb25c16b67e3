/*
 * pid_translate: procfast's pid translator (cache/index/pid_translator.c), the
 * fallback of pidns= views on kernels without the nsfs pid ioctls, checked
 * against those ioctls on a kernel that has them.
 *
 *   pid_translate NSFILE
 *
 * For every task (threads too) of this process's pid namespace (its /proc),
 * translates the tid into NSFILE's namespace both ways and compares; then
 * every view pid so found, and numbers that name no task there, back. Prints
 * one JSON line {"tasks": T, "in_view": V, "outside": O, "mismatches": M,
 * "first": "..."} and exits 0 when M is 0, 1 otherwise, 2 when it cannot run.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/nsfs.h>

#include "cache/index/pid_translator.h"

#ifndef NS_GET_PID_FROM_PIDNS
#define NS_GET_PID_FROM_PIDNS _IOR(NSIO, 0x6, int)
#define NS_GET_PID_IN_PIDNS _IOR(NSIO, 0x8, int)
#endif

static int nsfd;
static int tasks, in_view, outside, mismatches;
static char first[256];

static pid_t by_ioctl(unsigned long op, pid_t pid)
{
	int r = ioctl(nsfd, op, pid);

	return r > 0 ? r : 0;
}

static void mismatch(const char *what, pid_t pid, pid_t want, pid_t got)
{
	if (!mismatches++)
		snprintf(first, sizeof(first), "%s %d: ioctl %d, translator %d", what, pid, want,
			 got);
}

/* view -> daemon, for a view pid (which may name no task) */
static void check_to_daemon(pid_t v)
{
	pid_t want = by_ioctl(NS_GET_PID_FROM_PIDNS, v), got = pid_translator_to_daemon(v);

	if (want != got)
		mismatch("view pid", v, want, got);
}

static void check_task(pid_t tid)
{
	pid_t want = by_ioctl(NS_GET_PID_IN_PIDNS, tid), got = pid_translator_from_daemon(tid);

	tasks++;
	if (want != got)
		mismatch("daemon tid", tid, want, got);
	if (!want) {
		outside++;
		return;
	}
	in_view++;
	check_to_daemon(want);
	/* probably no task there: both must say 0 */
	check_to_daemon(want + 100000);
}

static void each_thread(const char *pid)
{
	char path[300];
	DIR *d;
	struct dirent *e;

	snprintf(path, sizeof(path), "/proc/%s/task", pid);
	if (!(d = opendir(path)))
		return; /* ended meanwhile */
	while ((e = readdir(d)))
		if (e->d_name[0] >= '1' && e->d_name[0] <= '9')
			check_task(atoi(e->d_name));
	closedir(d);
}

int main(int argc, char **argv)
{
	DIR *d;
	struct dirent *e;
	int r;

	if (argc != 2 || (nsfd = open(argv[1], O_RDONLY | O_CLOEXEC)) < 0) {
		fprintf(stderr, "usage: pid_translate NSFILE\n");
		return 2;
	}
	if (ioctl(nsfd, NS_GET_PID_IN_PIDNS, getpid()) < 0 && errno != ESRCH) {
		fprintf(stderr, "pid_translate: no nsfs pid ioctls to compare with: %s\n",
			strerror(errno));
		return 2;
	}
	if ((r = pid_translator_start(nsfd))) {
		fprintf(stderr, "pid_translate: %s\n", strerror(-r));
		return 2;
	}
	if (!(d = opendir("/proc")))
		return 2;
	while ((e = readdir(d)))
		if (e->d_name[0] >= '1' && e->d_name[0] <= '9')
			each_thread(e->d_name);
	closedir(d);
	check_to_daemon(0);
	check_to_daemon(-1);
	printf("{\"tasks\": %d, \"in_view\": %d, \"outside\": %d, \"mismatches\": %d, "
	       "\"first\": \"%s\"}\n", tasks, in_view, outside, mismatches, first);
	return mismatches ? 1 : 0;
}
