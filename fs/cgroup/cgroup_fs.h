/* Where a process's cgroup is, per controller, on cgroup v1 or v2.
 *
 * The hierarchies are found once, from the daemon's mountinfo (cgroup and
 * cgroup2 mounts), or given as one scratch tree (-o cgroup_root=DIR, for
 * tests: DIR shaped like a v2 hierarchy, or holding one directory per v1
 * controller). A process's place in each is read from /proc/PID/cgroup at
 * each use: processes move. Each controller is served by its v1 hierarchy
 * when it has one (this host binds them all to v1), else by the unified
 * hierarchy when its root lists it in cgroup.controllers.
 */
#ifndef PROCFAST_CGROUP_FS_H
#define PROCFAST_CGROUP_FS_H

#include <limits.h>
#include <sys/types.h>

enum cg_ctrl { CG_MEMORY, CG_CPU, CG_CPUACCT, CG_CPUSET, CG_BLKIO, CG_CTRLS };

/* One cgroup of one controller: a path relative to its hierarchy's root. */
struct cg_path {
	int dirfd;          /* the hierarchy's root (O_PATH), owned by cgroup_fs */
	int v2;             /* the unified hierarchy's file names apply */
	char rel[PATH_MAX]; /* "." for the root */
};

/* Finds the hierarchies; root: a scratch tree, or NULL for the mounted
 * ones. selfproc: the daemon's /proc. 0, or -errno (logged). */
int cgroup_fs_init(const char *root, int selfproc);

/* Whether any controller was found (else resources are the host's). */
int cgroup_fs_available(void);

/* A task's cgroups, every controller's from one read of its /proc/PID/cgroup. */
struct cg_set {
	int found[CG_CTRLS];
	struct cg_path of[CG_CTRLS];
};

/* The cgroups of task (a pid of the daemon's namespace). 0, or -errno
 * (-ENOENT: no such task); a controller without a hierarchy is not found. */
int cgroup_set(pid_t task, struct cg_set *set);

/* One controller's cgroup in set: 0, or -ENOENT. */
int cgroup_in(const struct cg_set *set, enum cg_ctrl ctrl, struct cg_path *out);

/* The cgroup of task for ctrl alone. 0, or -ENOENT, -errno. */
int cgroup_of(pid_t task, enum cg_ctrl ctrl, struct cg_path *out);

/* Its parent: 0, or -1 at the root. */
int cgroup_parent(struct cg_path *p);

/* Whether p is the hierarchy's root. */
int cgroup_is_root(const struct cg_path *p);

#endif
