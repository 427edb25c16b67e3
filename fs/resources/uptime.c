/* uptime: the age of the container's init, and as idle time that age less
 * the CPU time its cgroup used (LXCFS proc_uptime_read: the idle of one
 * CPU, whatever the container's count). The host's init (no reaper) gets
 * the host's file. */
#include <inttypes.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "fs/cgroup/cgroup_cpu.h"
#include "fs/lib/proc_fields.h"
#include "fs/lib/procfile.h"
#include "fs/resources/render.h"

/* A task's start, in seconds after boot (stat field 22). */
static int start_time(pid_t task, double *s)
{
	char buf[1024];
	unsigned long long ticks;

	if (procfile_task_read(res_proc_fd(), task, "stat", buf, sizeof(buf)) <= 0 ||
	    stat_number(buf, 22, &ticks))
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
