/* uptime: the age of the container's init, and as idle time that age less
 * the CPU time its cgroup used (LXCFS proc_uptime_read: the idle of one
 * CPU, whatever the container's count). The host's init (no reaper) gets
 * the host's file. */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fs/cgroup/cgroup_cpu.h"
#include "fs/lib/cleanup.h"
#include "fs/resources/render.h"

/* A task's start, in seconds after boot (stat field 22). */
static int start_time(pid_t task, double *s)
{
	char path[32], buf[1024];
	unsigned long long ticks;
	ssize_t n;
	const char *p;
	__do_close int fd = -1;

	snprintf(path, sizeof(path), "%d/stat", task);
	if ((fd = openat(res_proc_fd(), path, O_RDONLY | O_CLOEXEC)) < 0 ||
	    (n = read(fd, buf, sizeof(buf) - 1)) <= 0)
		return -1;
	buf[n] = '\0';
	if (!(p = strrchr(buf, ')')))
		return -1;
	/* ") S" then fields 4..21 before starttime */
	if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
		   &ticks) != 1)
		return -1;
	*s = (double)ticks / (double)sysconf(_SC_CLK_TCK);
	return 0;
}

int res_uptime(const struct res_target *t, const struct cg_set *cg, const char *src, FILE *out)
{
	struct timespec now;
	struct cg_set reaper_cg;
	double start, age, busy;
	uint64_t ns = 0;

	(void)src;
	if (!t->reaper || start_time(t->reaper, &start) || clock_gettime(CLOCK_BOOTTIME, &now))
		return 0;
	age = (double)now.tv_sec + (double)now.tv_nsec / 1e9 - start;
	if (age < 0)
		age = 0;
	if (t->reaper == t->cgroup)
		cg_cpu_busy_ns(cg, &ns);
	else if (!cgroup_set(t->reaper, &reaper_cg))
		cg_cpu_busy_ns(&reaper_cg, &ns);
	busy = (double)ns / 1e9;
	fprintf(out, "%.2f %.2f\n", age, age >= busy ? age - busy : age);
	return 1;
}
