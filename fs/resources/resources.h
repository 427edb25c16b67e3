/* Containers see their own resources (-o resources=): meminfo, cpuinfo,
 * stat, uptime, loadavg, swaps and diskstats made from a cgroup's numbers,
 * with LXCFS's rules field by field; the other files are not touched.
 *
 * Whose cgroup: in `init` mode (the default for pidns= views) that of the
 * view's pid 1; in `caller` mode that of the init of the caller's pid
 * namespace, or of the caller itself when it shares the daemon's (LXCFS's
 * rule); `off` mirrors the source. The numbers are read with the caller's
 * credentials: a cgroup it may not read gives the source's file instead. */
#ifndef PROCFAST_RESOURCES_H
#define PROCFAST_RESOURCES_H

#include <stddef.h>
#include <sys/types.h>

enum res_mode { RES_OFF, RES_INIT, RES_CALLER };

#include "fs/resources/res_target.h"

/* Sets the mode; cgroup_root: a scratch tree instead of the mounted
 * hierarchies (tests). Called once by a server before it serves. */
int resources_init(enum res_mode mode, const char *cgroup_root, int selfproc);

/* Whether the mount serves resources at all. */
int resources_on(void);

/* Whose numbers caller_tid (0: unknown) gets. */
struct res_target resources_target(pid_t caller_tid);

/* The text of file for target, made from the source's text src: 1 with it
 * in *out (malloc'd, maybe empty) and *out_len; 0 when the source's text
 * stands (no cgroup, not readable as the caller), -errno. Runs with the
 * caller's credentials. */
int resources_render(enum res_file file, const struct res_target *target, const char *src,
		     char **out, size_t *out_len);

#endif
