#include "fs/caller/source_op.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fs/caller/caller.h"
#include "fs/caller/ns_helper.h"
#include "fs/lib/settings.h"

/* A signal 0 sent with tgkill reaches only a thread of the group it names. */
int source_is_daemons(const char *path)
{
	pid_t self = (pid_t)syscall(SYS_getpid);
	char *end;
	long pid;

	if (*path < '1' || *path > '9')
		return 0;
	pid = strtol(path, &end, 10);
	if (*end != '/' && *end != '\0')
		return 0;
	return pid == self || syscall(SYS_tgkill, self, (pid_t)pid, 0) == 0;
}

int source_needs_helper(const char *path)
{
	const struct caller *c = caller_current();

	if (!c || !c->tid)
		return 0;
	return c->foreign_user || (!caller_is_daemons_equal(c) && source_is_daemons(path));
}

/* A helper is found, made and asked as the daemon: it reads the caller's
 * /proc files (its namespaces, credentials), which a caller that is not
 * dumpable may not read itself. */
#define BY_HELPER(call)                        \
	({                                     \
		pid_t tid = caller_current()->tid; \
		caller_step_out();             \
		__typeof__(call) r_ = (call);  \
		caller_step_in();              \
		r_;                            \
	})

/* What a helper's EOVERFLOW (it could not take the caller's ids: they are
 * not mapped in the caller's own user namespace, made without a map) leaves:
 * a worker acting with the caller's kernel ids stands in, as before there
 * were helpers, except on the daemon's own processes, where no worker may
 * (EPERM then). 1: the worker makes the operation; 0: r is the answer. */
static int worker_stands_in(const char *path, long *r)
{
	if (*r != -EOVERFLOW)
		return 0;
	if (!source_is_daemons(path))
		return 1;
	*r = -EPERM;
	return 0;
}

/* The attributes, once the caller's helper found it may have them: a
 * helper in another user namespace sees ids as that namespace maps them,
 * and the kernel takes them as the daemon's (kernel ids): read again as
 * the daemon. */
static int stat_as_daemon(const char *path, struct stat *st, int flags)
{
	int r;

	caller_step_out();
	r = fstatat(pf.srcfd, path, st, flags) ? -errno : 0;
	caller_step_in();
	return r;
}

int source_stat(const char *path, struct stat *st, int flags)
{
	long r;

	if (source_needs_helper(path)) {
		r = BY_HELPER(ns_helper_stat(tid, path, flags, st));
		if (!worker_stands_in(path, &r)) {
			if (r || !caller_current()->foreign_user)
				return (int)r;
			return stat_as_daemon(path, st, flags);
		}
	}
	return fstatat(pf.srcfd, path, st, flags) ? -errno : 0;
}

ssize_t source_readlink(const char *path, char *buf, size_t size)
{
	long r;

	if (source_needs_helper(path)) {
		r = BY_HELPER(ns_helper_readlink(tid, path, buf, size));
		if (!worker_stands_in(path, &r))
			return r;
	}
	r = readlinkat(pf.srcfd, path, buf, size);
	return r < 0 ? -errno : r;
}

int source_access(const char *path, int mode, int flags)
{
	long r;

	if (source_needs_helper(path)) {
		r = BY_HELPER(ns_helper_access(tid, path, mode, flags));
		if (!worker_stands_in(path, &r))
			return (int)r;
	}
	return faccessat(pf.srcfd, path, mode, flags) ? -errno : 0;
}

int source_open_dir(const char *path, int *by_helper)
{
	long r;

	*by_helper = source_needs_helper(path);
	if (*by_helper) {
		r = BY_HELPER(ns_helper_open_dir(tid, path));
		if (!worker_stands_in(path, &r))
			return (int)r;
		*by_helper = 0;
	}
	r = openat(pf.srcfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return r < 0 ? -errno : (int)r;
}

int source_helper_declined(const char *path, int r)
{
	long lr = r;

	return worker_stands_in(path, &lr);
}
