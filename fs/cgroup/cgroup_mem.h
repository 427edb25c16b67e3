/* A cgroup's memory numbers, in bytes, the same on v1 and v2. */
#ifndef PROCFAST_CGROUP_MEM_H
#define PROCFAST_CGROUP_MEM_H

#include <stdint.h>
#include <sys/types.h>

#include "fs/cgroup/cgroup_fs.h"

struct cg_memory {
	uint64_t limit;      /* the binding limit (own or an ancestor's); CG_UNLIMITED */
	uint64_t usage;
	int has_swap;        /* swap accounting is on */
	uint64_t swap_limit; /* swap alone (v1: mem+swap limit less the memory limit) */
	uint64_t swap_usage; /* swap alone */
	/* memory.stat (v1: the hierarchical total_* lines) */
	uint64_t cache, shmem, mapped, dirty, writeback, anon_huge;
	uint64_t active_anon, inactive_anon, active_file, inactive_file, unevictable;
};

/* The memory cgroup of set, read as the calling thread's credentials
 * allow; its swap only when want_swap (the host has swap: else there is
 * none to show). 0, or -errno (-ENOENT: no memory controller). */
int cg_memory_read(const struct cg_set *set, int want_swap, struct cg_memory *m);

#endif
