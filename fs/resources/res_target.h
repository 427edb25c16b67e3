/* What a renderer is asked for: which file, for whose numbers. Apart from
 * resources.h so that the renderers (render.h), which resources.c calls,
 * need not include it. */
#ifndef PROCFAST_RES_TARGET_H
#define PROCFAST_RES_TARGET_H

#include <sys/types.h>

/* The files, as name_class.c marks them (NC_RES()). */
enum res_file { RES_NONE, RES_MEMINFO, RES_CPUINFO, RES_STAT, RES_UPTIME, RES_LOADAVG,
		RES_SWAPS, RES_DISKSTATS, RES_FILES };

/* Whose numbers a caller gets: tasks of the daemon's pid namespace. */
struct res_target {
	pid_t cgroup; /* the task whose cgroups give the numbers; 0: none */
	pid_t reaper; /* the init whose age is the uptime; 0: the source's uptime */
};

#endif
