/* Who sent a request, and acting as them.
 *
 * procfs decides access from the whole current task: fsuid/fsgid, groups and
 * capabilities (ptrace_may_access with PTRACE_MODE_*_FSCREDS, generic
 * permission checks, CAP_SYS_RESOURCE on oom_score_adj writes...), but also
 * its euid, which owns every user namespace it created and so holds every
 * capability in them (cap_capable), and which sysctl permissions compare
 * (test_perm, net_ctl_permissions). The daemon runs as root, so every source
 * access is made with the worker thread switched to the caller's whole
 * identity: real, effective and fs uid and gid, supplementary groups, and
 * effective capabilities (never more than the daemon's). Only the saved ids
 * stay the daemon's, so that the thread can come back: the kernel never
 * reads the accessor's saved ids. The raw syscalls act on one thread, unlike
 * glibc's setresuid and setgroups, which change every thread; the daemon's
 * SECBIT_NO_SETUID_FIXUP keeps the permitted set across the switch.
 *
 * What stays the daemon's is its thread group: the kernel lets a task
 * through to its own (ptrace checks, the fd directory's permission). An
 * operation on the daemon's own processes is therefore never made by a
 * worker (caller_begin reports it as foreign, RNS_DAEMON).
 */
#ifndef PROCFAST_CALLER_H
#define PROCFAST_CALLER_H

#include <stdint.h>
#include <sys/types.h>

#include <fuse_lowlevel.h>

#include "fs/caller/identity.h"


/* Records the daemon's own credentials; selfproc is the daemon's /proc. */
int caller_init(int selfproc);

/* Records the daemon's capabilities again, after they changed (dropped):
 * a caller gets its effective set within the daemon's permitted set. */
int caller_caps_reload(void);

/* Fills c from the request. Never fails: what cannot be learnt about the
 * caller is assumed unprivileged (its real and effective ids its fs ids,
 * no capabilities). */
void caller_load(fuse_req_t req, struct caller *c);

/* The caller's thread group, read afresh: a cached one could belong to a
 * previous owner of a reused tid. 0 when unknown, with errno ENOENT, or
 * EMFILE/ENFILE/ENOMEM when the daemon could not look. */
pid_t caller_tgid(const struct caller *c);

/* Whether c may do all the daemon may: nothing to switch for it. */
int caller_is_daemons_equal(const struct caller *c);

/* Sets the calling thread's effective and fs ids, leaving its real and saved
 * ones (raw syscalls: this thread only). 0, or -1 with errno. */
int caller_ids_set(uid_t euid, uid_t fsuid, gid_t egid, gid_t fsgid);

/* Switches the calling thread to c's credentials / back to the daemon's. */
int caller_enter(const struct caller *c);
void caller_leave(void);

/* What every operation that touches the source does first: loads the
 * caller of req, enters its namespaces of the kinds asked (RNS bits, see
 * reader_ns.h) and takes its credentials. 0, or -errno (EPERM when the
 * caller's namespaces cannot be entered); caller_end undoes it. */
int caller_begin(fuse_req_t req, unsigned ns_kinds, struct caller *c);
void caller_end(struct caller *c);

/* The caller this thread acts as (between caller_begin and caller_end), or
 * NULL. */
const struct caller *caller_current(void);

/* Back to the daemon's credentials for a while, within a caller's operation
 * (to ask a helper, which reads the caller's /proc files as the daemon), and
 * the caller's again: caller_step_in aborts the server rather than go on
 * as the daemon. The namespaces entered stay. */
void caller_step_out(void);
void caller_step_in(void);

#endif
