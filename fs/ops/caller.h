/* Who sent a request, and acting as them.
 *
 * procfs decides access from the current task's fsuid/fsgid, groups and
 * capabilities (ptrace_may_access with PTRACE_MODE_*_FSCREDS, generic
 * permission checks, CAP_SYS_RESOURCE on oom_score_adj writes...). The daemon
 * runs as root, so every source access is made with the worker thread
 * switched to the caller's credentials: fsuid/fsgid and supplementary groups
 * of the caller, and the caller's effective capabilities (never more than
 * the daemon's). These syscalls are per-thread, unlike glibc's setgroups.
 */
#ifndef PROCFAST_CALLER_H
#define PROCFAST_CALLER_H

#include <stdint.h>
#include <sys/types.h>

#include <fuse_lowlevel.h>

#include "fs/ops/reader_ns.h"

#define CALLER_MAX_GROUPS 256

struct caller {
	pid_t tid;   /* 0 when the caller is outside the mount's pid namespace */
	pid_t tgid;
	uid_t uid;   /* fsuid */
	gid_t gid;   /* fsgid */
	uint64_t cap_eff;
	int ngroups;
	gid_t groups[CALLER_MAX_GROUPS];
	struct reader_ns ns; /* its namespaces this thread entered, and the foreign ones */
};

/* Records the daemon's own credentials; selfproc is the daemon's /proc. */
int caller_init(int selfproc);

/* Records the daemon's capabilities again, after they changed (dropped):
 * a caller gets its effective set within the daemon's permitted set. */
int caller_caps_reload(void);

/* Fills c from the request. Never fails: what cannot be learnt about the
 * caller is assumed unprivileged. */
void caller_load(fuse_req_t req, struct caller *c);

/* The caller's thread group, read afresh: a cached one could belong to a
 * previous owner of a reused tid. 0 when unknown, with errno ENOENT, or
 * EMFILE/ENFILE/ENOMEM when the daemon could not look. */
pid_t caller_tgid(const struct caller *c);

/* Switches the calling thread to c's credentials / back to the daemon's. */
int caller_enter(const struct caller *c);
void caller_leave(void);

/* What every operation that touches the source does first: loads the
 * caller of req, enters its namespaces of the kinds asked (RNS bits, see
 * reader_ns.h) and takes its credentials. 0, or -errno (EPERM when the
 * caller's namespaces cannot be entered); caller_end undoes it. */
int caller_begin(fuse_req_t req, unsigned ns_kinds, struct caller *c);
void caller_end(struct caller *c);

#endif
