/* A cgroup's CPUs and CPU time: its cpuset, its CFS quota, and the time
 * its tasks used, per CPU where the hierarchy tells it (v1's cpuacct). */
#ifndef PROCFAST_CGROUP_CPU_H
#define PROCFAST_CGROUP_CPU_H

#include <sched.h>
#include <stdint.h>
#include <sys/types.h>

#include "fs/cgroup/cgroup_fs.h"

struct cg_cpu_time {
	uint64_t user, system; /* USER_HZ ticks, as /proc/stat counts */
};

/* The CPUs cg's cpuset allows (v1 cpuset.cpus, v2 cpuset.cpus.effective). */
int cg_cpuset(const struct cg_set *cg, cpu_set_t *cpus);

/* How many CPUs set's CFS quota allows, rounded up (0: no quota), and the
 * exact ratio quota/period. 0, or -errno. */
int cg_cpu_quota(const struct cg_set *set, int *cpus, double *exact);

/* Per-CPU user and system time of set's cpuacct cgroup for CPUs 0..n-1 (v1
 * cpuacct.usage_all, or usage_percpu split as LXCFS splits it). 0, or
 * -errno (-ENOENT on v2, which keeps no per-CPU time). */
int cg_cpu_times(const struct cg_set *set, struct cg_cpu_time *t, int n);

/* Total CPU time of set's cpuacct cgroup, in nanoseconds. 0, or -errno. */
int cg_cpu_busy_ns(const struct cg_set *set, uint64_t *ns);

#endif
