/* What every file's renderer shares: the output, the source's lines. */
#ifndef PROCFAST_RES_RENDER_H
#define PROCFAST_RES_RENDER_H

#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "fs/cgroup/cgroup_fs.h"
#include "fs/lib/lines.h"
#include "fs/resources/res_target.h"

/* A renderer writes the file's text to out and returns 1, or returns 0
 * (the source stands: nothing to show for this cgroup) or -errno. cg: the
 * cgroups of t->cgroup; src: the source's text, NUL-terminated. */
typedef int (*res_renderer)(const struct res_target *t, const struct cg_set *cg, const char *src,
			    FILE *out);

int res_meminfo(const struct res_target *t, const struct cg_set *cg, const char *src, FILE *out);
int res_swaps(const struct res_target *t, const struct cg_set *cg, const char *src, FILE *out);
int res_cpuinfo(const struct res_target *t, const struct cg_set *cg, const char *src, FILE *out);
int res_stat(const struct res_target *t, const struct cg_set *cg, const char *src, FILE *out);
int res_uptime(const struct res_target *t, const struct cg_set *cg, const char *src, FILE *out);
int res_loadavg(const struct res_target *t, const struct cg_set *cg, const char *src, FILE *out);
int res_diskstats(const struct res_target *t, const struct cg_set *cg, const char *src, FILE *out);

/* Source lines (walked with line_next, fs/lib/lines.h): a line's length
 * with its newline, and a copy of it to out. */
size_t res_line_len(const char *l);
void res_copy_line(FILE *out, const char *l);

/* The value of "Key:   N kB" in a meminfo-shaped text, or 0. */
uint64_t res_meminfo_kb(const char *text, const char *key);

/* The daemon's /proc, for facts about tasks (their start time). */
int res_proc_fd(void);

/* The CPUs a cgroup may use: its cpuset (every CPU without one), and how many of them its CFS
 * quota lets show (LXCFS's --enable-cfs view), with the quota's exact
 * share in CPUs (0: none). 0, or -errno. */
int res_visible_cpus(const struct cg_set *cg, cpu_set_t *set, int *max_cpus, double *exact);

#endif
