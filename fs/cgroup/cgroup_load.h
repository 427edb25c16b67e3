/* Load averages per cgroup, as LXCFS's --enable-loadavg computes them: every
 * 5 s, the tasks of the cgroup (and of its children, 3 levels down) that
 * run or wait uninterruptibly, folded into the kernel's exponential
 * averages.
 *
 * Only cgroups read recently are followed: the first read of a cgroup
 * starts following it (with one sample at once), and a cgroup nobody read
 * for LOAD_IDLE_S is dropped. With nothing to follow, the sampling thread
 * sleeps until the next first read: no work per container while nobody
 * reads. */
#ifndef PROCFAST_CGROUP_LOAD_H
#define PROCFAST_CGROUP_LOAD_H

#include <stdint.h>
#include <sys/types.h>

#include "fs/cgroup/cgroup_fs.h"

#define LOAD_PERIOD_S 5
#define LOAD_IDLE_S 600

struct cg_load {
	uint64_t avenrun[3]; /* fixed point, 11 bits of fraction (the kernel's FSHIFT) */
	unsigned running, total;
	pid_t last;          /* the highest tid */
};

/* Starts the sampler (asleep until a first read); selfproc: the daemon's
 * /proc, where it counts tasks. 0, or -errno. */
int cg_load_init(int selfproc);

/* The load of set's cpu cgroup, once the caller (the calling thread's
 * credentials) may read its cgroup.procs. 0, or -errno. */
int cg_load_get(const struct cg_set *set, struct cg_load *out);

/* How many cgroups are followed (for the tests, through the log). */
unsigned cg_load_followed(void);

#endif
