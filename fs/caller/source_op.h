/* Source operations made for the caller this thread acts as (caller_begin).
 *
 * A worker thread makes them itself, as the caller, except where it cannot
 * stand for the caller; a helper process then makes them, as the caller, in
 * its namespaces (fs/caller/ns_helper.h):
 *  - for a caller in another user namespace: its capabilities act there,
 *    and its euid owns namespaces from there, which a worker in the
 *    daemon's user namespace cannot be;
 *  - on the daemon's own thread group: the kernel lets a worker through
 *    whoever the caller is (ptrace checks, the fd directory's permission),
 *    a helper is another thread group. A caller that may do all the daemon
 *    may gets the worker's answer, which is then the same.
 */
#ifndef PROCFAST_SOURCE_OP_H
#define PROCFAST_SOURCE_OP_H

#include <sys/stat.h>
#include <sys/types.h>

/* Whether path (relative to the source root) is in a process of the
 * daemon's own thread group. */
int source_is_daemons(const char *path);

/* Whether an operation on path must not be made by a worker for the acting
 * caller. */
int source_needs_helper(const char *path);

/* fstatat, readlinkat (not terminated), faccessat and an open of a
 * directory (O_RDONLY | O_DIRECTORY | O_CLOEXEC) of path below the source
 * root, as the acting caller. 0 / bytes / fd, or -errno. A directory a
 * helper opened (*by_helper) had the caller's whole listing checked: it is
 * listed as the daemon. */
int source_stat(const char *path, struct stat *st, int flags);
ssize_t source_readlink(const char *path, char *buf, size_t size);
int source_access(const char *path, int mode, int flags);
int source_open_dir(const char *path, int *by_helper);

/* Whether a helper's answer r for path (EOVERFLOW: the caller's ids are not
 * mapped in its own user namespace) leaves the operation to the worker. */
int source_helper_declined(const char *path, int r);

#endif
