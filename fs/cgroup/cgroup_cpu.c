#include "fs/cgroup/cgroup_cpu.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include "fs/cgroup/cgroup_fs.h"
#include "fs/cgroup/cgroup_read.h"
#include "fs/lib/cpulist.h"
#include "fs/lib/lines.h"

int cg_cpuset(const struct cg_set *cg, cpu_set_t *cpus)
{
	struct cg_path p;
	char text[4096];
	ssize_t r;

	if ((r = cgroup_in(cg, CG_CPUSET, &p)))
		return (int)r;
	r = cg_read(&p, p.v2 ? "cpuset.cpus.effective" : "cpuset.cpus", text, sizeof(text));
	if (r < 0)
		return (int)r;
	return cpulist_parse(text, cpus);
}

/* quota and period in microseconds; quota <= 0: none. */
static int read_quota(const struct cg_set *set, int64_t *quota, int64_t *period)
{
	struct cg_path p;
	char text[64];
	ssize_t r;

	if ((r = cgroup_in(set, CG_CPU, &p)))
		return (int)r;
	if (p.v2) {
		if ((r = cg_read(&p, "cpu.max", text, sizeof(text))) < 0)
			return (int)r;
		if (!strncmp(text, "max", 3)) {
			*quota = -1;
			return sscanf(text, "max %" SCNd64, period) == 1 ? 0 : -EINVAL;
		}
		return sscanf(text, "%" SCNd64 " %" SCNd64, quota, period) == 2 ? 0 : -EINVAL;
	}
	if ((r = cg_read(&p, "cpu.cfs_quota_us", text, sizeof(text))) < 0 ||
	    sscanf(text, "%" SCNd64, quota) != 1)
		return r < 0 ? (int)r : -EINVAL;
	*period = 0;
	if (*quota <= 0) /* none (-1): its period says nothing */
		return 0;
	if ((r = cg_read(&p, "cpu.cfs_period_us", text, sizeof(text))) < 0 ||
	    sscanf(text, "%" SCNd64, period) != 1)
		return r < 0 ? (int)r : -EINVAL;
	return 0;
}

int cg_cpu_quota(const struct cg_set *set, int *cpus, double *exact)
{
	int64_t quota, period;
	int r = read_quota(set, &quota, &period), nprocs = get_nprocs();

	*cpus = 0;
	*exact = 0;
	if (r)
		return r;
	if (quota <= 0 || period <= 0)
		return 0;
	*cpus = (int)(quota / period + (quota % period > 0));
	*exact = (double)quota / (double)period;
	if (*cpus > nprocs)
		*cpus = nprocs;
	if (*exact > nprocs)
		*exact = nprocs;
	return 0;
}

static uint64_t ns_to_ticks(uint64_t ns)
{
	return (uint64_t)((double)ns / 1e9 * (double)sysconf(_SC_CLK_TCK));
}

/* cpuacct.usage_all: "cpu user system" then "N USER_NS SYSTEM_NS" lines. */
static int parse_usage_all(const char *text, struct cg_cpu_time *t, int n)
{
	const char *l = strchr(text, '\n');
	uint64_t user, sys;
	int cpu;

	if (strncmp(text, "cpu user system", 15) || !l)
		return -EINVAL;
	for (l = line_next(l); l; l = line_next(l)) {
		if (sscanf(l, "%d %" SCNu64 " %" SCNu64, &cpu, &user, &sys) != 3)
			return -EINVAL;
		if (cpu >= 0 && cpu < n)
			t[cpu] = (struct cg_cpu_time){ ns_to_ticks(user), ns_to_ticks(sys) };
	}
	return 0;
}

/* cpuacct.usage_percpu: one total per CPU; LXCFS counts it as both user
 * and system time. */
static int parse_percpu(const char *text, struct cg_cpu_time *t, int n)
{
	char *end;

	for (int cpu = 0; cpu < n; cpu++, text = end) {
		uint64_t v = strtoull(text, &end, 10);

		if (end == text)
			break;
		t[cpu] = (struct cg_cpu_time){ ns_to_ticks(v), ns_to_ticks(v) };
	}
	return 0;
}

int cg_cpu_times(const struct cg_set *set, struct cg_cpu_time *t, int n)
{
	struct cg_path p;
	char buf[16384];
	ssize_t r;

	memset(t, 0, sizeof(*t) * (size_t)n);
	if ((r = cgroup_in(set, CG_CPUACCT, &p)))
		return (int)r;
	if (p.v2)
		return -ENOENT;
	if ((r = cg_read(&p, "cpuacct.usage_all", buf, sizeof(buf))) >= 0)
		return parse_usage_all(buf, t, n);
	if ((r = cg_read(&p, "cpuacct.usage_percpu", buf, sizeof(buf))) >= 0)
		return parse_percpu(buf, t, n);
	return (int)r;
}

int cg_cpu_busy_ns(const struct cg_set *set, uint64_t *ns)
{
	struct cg_path p;
	char text[2048];
	uint64_t usec;
	ssize_t r;

	if ((r = cgroup_in(set, CG_CPUACCT, &p)))
		return (int)r;
	if (!p.v2)
		return cg_read_u64(&p, "cpuacct.usage", ns);
	if ((r = cg_read(&p, "cpu.stat", text, sizeof(text))) < 0)
		return (int)r;
	if ((r = cg_key_u64(text, "usage_usec", &usec)))
		return (int)r;
	*ns = usec * 1000;
	return 0;
}
