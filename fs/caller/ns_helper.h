/* Source operations a worker thread cannot make in the caller's
 * namespaces: made by a helper process that lives in them.
 *
 * One thread of a multithreaded process cannot enter a user or a time
 * namespace (fs/caller/reader_ns.h). A single-threaded process can: a helper
 * enters every namespace of the caller that is not the daemon's (user,
 * time, network, uts, ipc, cgroup; never its pid namespace, where it would
 * be one of the container's processes) and opens, reads and writes there,
 * with the caller's credentials as its own user namespace sees them (ids
 * and capabilities in that namespace, as /proc/TID/status and capget give
 * them). procfs then evaluates the entry exactly as for the caller: the
 * opener's user namespace (seq_user_ns: status's Uid lines, keys, socket
 * owners), the reader's time namespace (uptime, start times), capabilities
 * held in the caller's own namespace.
 *
 * Helpers are forked by a small process made at server start, before any
 * thread (fork() of a multithreaded server would be unsafe); one helper per
 * set of namespaces, ended after a while of disuse or with the server. A
 * helper is not dumpable and its memory belongs to the initial user
 * namespace, so no process of the container may trace it.
 */
#ifndef PROCFAST_NS_HELPER_H
#define PROCFAST_NS_HELPER_H

#include <sys/stat.h>
#include <sys/types.h>

struct ns_helper;

/* The maker's and the helpers' command name (comm), told apart from the
 * daemon's own processes so. */
#define NS_HELPER_COMM "procfast-nsh"

/* Starts the process that makes helpers. srcfd: the source procfs root;
 * selfproc: the daemon's /proc. Before any thread. 0 or -errno. */
int ns_helper_init(int srcfd, int selfproc);
void ns_helper_stop(void);

/* The helper for thread tid's namespaces, referenced (ns_helper_put), or
 * NULL with errno (EPERM when they cannot be entered). */
struct ns_helper *ns_helper_get(pid_t tid);
void ns_helper_put(struct ns_helper *h);

/* As thread tid, in *h's namespaces: opens path (relative to the source
 * root, with open flags) and closes it again, for open's answer; reads or
 * writes at off. 0 / bytes, or -errno. A helper that died is replaced in *h
 * (or *h is NULL and the answer EPERM). */
int ns_helper_open(struct ns_helper **h, pid_t tid, const char *path, int flags);
ssize_t ns_helper_read(struct ns_helper **h, pid_t tid, const char *path, int flags, char *buf,
		       size_t size, off_t off);
ssize_t ns_helper_write(struct ns_helper **h, pid_t tid, const char *path, int flags,
			const char *buf, size_t size, off_t off);

/* As thread tid, in its namespaces, with a helper of its own for the call:
 * fstatat, readlinkat (bytes, not terminated) and faccessat of path, and
 * an open of the directory path handed back (an fd, to close). 0 / bytes /
 * fd, or -errno (EPERM where no helper can be had; EOVERFLOW where the
 * caller's ids are not mapped in its user namespace, so that no helper can
 * take them). For the operations a worker must not make itself
 * (fs/caller/source_op.h). */
int ns_helper_stat(pid_t tid, const char *path, int flags, struct stat *st);
ssize_t ns_helper_readlink(pid_t tid, const char *path, char *buf, size_t size);
int ns_helper_access(pid_t tid, const char *path, int mode, int flags);
int ns_helper_open_dir(pid_t tid, const char *path);

/* Ends helpers unused for a while (from a periodic thread). */
void ns_helper_trim(void);

#endif
