/* Where the daemon's own cgroup namespace root is inside a cgroup mount that
 * reaches above it.
 *
 * /proc/PID/cgroup and a cgroup mount's root (mountinfo) are shown relative
 * to the reader's cgroup namespace. A daemon in a container with one of its
 * own (Kubernetes gives every container one on cgroup v2 nodes) that binds
 * the node's hierarchy sees that mount's root as "/../.." and another pod's
 * cgroup as "/../podB/ctr": a path from its namespace's root, which the
 * kernel never names. That root is found once, as the directory at the
 * mount's depth below it that holds the daemon (its cgroup.procs); paths are
 * then resolved from it, ".." included.
 */
#ifndef PROCFAST_CGROUP_NS_ROOT_H
#define PROCFAST_CGROUP_NS_ROOT_H

/* mountfd: the mount's root; mount_root: its mountinfo root field ("/.." n
 * times); own: the daemon's cgroup in that hierarchy as its /proc/self/cgroup
 * names it ("/" or "/sub"). An O_PATH fd of the namespace's root inside the
 * mount, or -errno (-ENOENT: the mount is not above it, or it is not found). */
int cgroup_ns_root_open(int mountfd, const char *mount_root, const char *own);

/* Whether path (from /proc/PID/cgroup, relative to the namespace's root) is
 * ups then names, with no ".." after a name: what the kernel prints. */
int cgroup_ns_path_valid(const char *path);

#endif
