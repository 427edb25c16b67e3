#include "fs/caller/caller.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/capability.h>
#include <linux/securebits.h>
#include <sys/prctl.h>

#include "fs/caller/group_cache.h"
#include "fs/lib/log.h"
#include "fs/lib/proc_fields.h"
#include "fs/lib/procfile.h"

static int self_proc = -1;
static uint64_t daemon_eff;     /* effective set to restore */
static uint64_t daemon_prm;     /* permitted set: the most a caller may get */
static uint64_t daemon_inh;
static uid_t daemon_uid;        /* the daemon's effective ids, to come back to */
static gid_t daemon_gid;

/* The caller this thread acts as, between caller_begin and caller_end. */
static __thread const struct caller *acting;
/* Threads switched by caller_enter: lets caller_leave skip the restore. */
static __thread int switched;
/* Whether this thread's supplementary groups may be other than none: -1
 * until it first sets them (a thread inherits its creator's). */
static __thread int groups_held = -1;

static int caps_get(uint64_t *eff, uint64_t *prm, uint64_t *inh)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2] = { { 0 } }; /* valgrind sees only d[0] written */

	if (syscall(SYS_capget, &h, d))
		return -errno;
	*eff = d[0].effective | (uint64_t)d[1].effective << 32;
	*prm = d[0].permitted | (uint64_t)d[1].permitted << 32;
	*inh = d[0].inheritable | (uint64_t)d[1].inheritable << 32;
	return 0;
}

static int caps_set_effective(uint64_t eff)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2] = {
		{ (uint32_t)eff, (uint32_t)daemon_prm, (uint32_t)daemon_inh },
		{ (uint32_t)(eff >> 32), (uint32_t)(daemon_prm >> 32), (uint32_t)(daemon_inh >> 32) },
	};

	return syscall(SYS_capset, &h, d) ? -errno : 0;
}

/* Id changes leave capabilities alone (no setuid fixup): a worker keeps its
 * permitted set while it acts as a caller, sets its effective set itself,
 * and takes its fs ids after its effective ones. Securebits are per thread
 * and inherited: set before any thread. A daemon that may not (no
 * CAP_SETPCAP: a user's own mount) never switches anyway. */
static void keep_caps_across_id_changes(void)
{
	int bits = prctl(PR_GET_SECUREBITS, 0, 0, 0, 0);

	if (bits >= 0 && !(bits & SECBIT_NO_SETUID_FIXUP))
		prctl(PR_SET_SECUREBITS, (unsigned long)(bits | SECBIT_NO_SETUID_FIXUP), 0, 0, 0);
}

int caller_init(int selfproc)
{
	self_proc = selfproc;
	daemon_uid = geteuid();
	daemon_gid = getegid();
	keep_caps_across_id_changes();
	return caller_caps_reload();
}

int caller_caps_reload(void)
{
	return caps_get(&daemon_eff, &daemon_prm, &daemon_inh);
}

/* The caller thread's status gives its thread group and supplementary
 * groups (the request header has only pid, fsuid and fsgid). */
static int load_status(struct caller *c)
{
	struct task_ids ids;
	char buf[4096];

	if (procfile_read(self_proc, c->tid, "status", buf, sizeof(buf)) <= 0)
		return procfile_out_of_resources(errno) ? -errno : -ENOENT;
	c->tgid = status_tgid(buf);
	c->ngroups = status_groups(buf, c->groups, CALLER_MAX_GROUPS);
	/* The request's fs ids are the ones of its moment; the status's may
	 * be a later setuid's: the effective ids count only while they agree. */
	if (status_ids(buf, &ids) == 0 && ids.uid[IDS_FS] == c->uid && ids.gid[IDS_FS] == c->gid) {
		c->euid = ids.uid[IDS_EFFECTIVE];
		c->egid = ids.gid[IDS_EFFECTIVE];
	}
	return 0;
}

/* Capabilities act in their holder's user namespace, and an euid owns
 * namespaces only from its own: no worker can stand for a caller in another
 * user namespace (fs/caller/source_op.h sends its operations to a helper in its
 * namespaces), and a worker takes none of its capabilities. */
static void load_user_ns(struct caller *c)
{
	c->foreign_user = !reader_ns_is_daemons(RNS_USER, reader_ns_of(c->tid, RNS_USER));
	if (c->foreign_user)
		c->cap_eff = 0;
}

/* capget() reads another thread's capabilities in one syscall, so they are
 * always current; only groups and tgid need the status file. A caller with
 * capabilities has its user namespace asked at every request:
 * unshare(CLONE_NEWUSER) and setns() give a full set at once. */
static int load_caps(struct caller *c)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, c->tid };
	struct __user_cap_data_struct d[2] = { { 0 } }; /* valgrind sees only d[0] written */

	if (syscall(SYS_capget, &h, d))
		return -errno;
	c->cap_eff = d[0].effective | (uint64_t)d[1].effective << 32;
	if (c->cap_eff)
		load_user_ns(c);
	return 0;
}

static int same_as_daemon(const struct caller *c);

/* Groups, effective ids, tgid and (for a caller without capabilities, whose
 * namespace load_caps did not ask) user namespace from the cache, else from
 * the caller's status and ns/user; none if the caller is gone. */
static void load_groups(struct caller *c, int user_ns_known)
{
	int foreign = c->foreign_user;

	if (group_cache_get(c) == 0) {
		if (user_ns_known)
			c->foreign_user = foreign;
		return;
	}
	if (!user_ns_known)
		load_user_ns(c);
	if (load_status(c) < 0)
		c->ngroups = 0;
	else
		group_cache_put(c);
}

/* Most callers are single-threaded: a thread-group pidfd opens only for a
 * leader, and then tgid == tid without reading its status. */
static int is_leader(pid_t tid)
{
	int fd = (int)syscall(SYS_pidfd_open, tid, 0);

	if (fd < 0)
		return 0;
	close(fd);
	return 1;
}

pid_t caller_tgid(const struct caller *c)
{
	struct caller fresh = *c;
	int r;

	errno = ENOENT;
	if (!c->tid)
		return 0;
	if (is_leader(c->tid))
		return c->tid;
	if ((r = load_status(&fresh)) < 0)
		errno = -r;
	return r == 0 ? fresh.tgid : 0;
}

void caller_load(fuse_req_t req, struct caller *c)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);

	c->tid = ctx->pid;
	c->tgid = 0;
	c->uid = c->euid = ctx->uid;
	c->gid = c->egid = ctx->gid;
	c->cap_eff = 0;
	c->foreign_user = 0;
	c->ngroups = 0;
	if (c->tid <= 0 || load_caps(c) < 0) {
		c->tid = 0;
		c->cap_eff = 0;
		return;
	}
	/* Groups only matter when the caller is switched to. */
	if (!same_as_daemon(c))
		load_groups(c, c->cap_eff || c->foreign_user);
}

/* Nothing to switch: the caller is as privileged as the daemon, or the
 * daemon runs unprivileged (a user's own mount, without allow_other: its
 * callers are that user, and the daemon could not take another identity). */
static int same_as_daemon(const struct caller *c)
{
	const uint64_t id_caps = 1ULL << CAP_SETUID | 1ULL << CAP_SETGID;

	if ((daemon_prm & id_caps) != id_caps)
		return 1;
	return c->uid == daemon_uid && c->gid == daemon_gid &&
	       (c->cap_eff & daemon_eff) == daemon_eff;
}

int caller_is_daemons_equal(const struct caller *c)
{
	return same_as_daemon(c);
}

/* Groups that add nothing to the fsgid (none, or only the primary group,
 * which initgroups lists): access checks look at the fsgid first
 * (in_group_p), so no group list gives the same answers, and the two
 * setgroups of a switch are saved. */
static int groups_add_nothing(const struct caller *c)
{
	for (int i = 0; i < c->ngroups; i++)
		if (c->groups[i] != c->gid)
			return 0;
	return 1;
}

static int groups_set(const struct caller *c)
{
	int want = !groups_add_nothing(c);

	if (!want && !groups_held)
		return 0;
	if (syscall(SYS_setgroups, want ? (size_t)c->ngroups : 0, c->groups))
		return -1;
	groups_held = want;
	return 0;
}

/* The ids a worker takes: the caller's effective and fs ids. Its real and
 * saved ids stay the daemon's: signals, prlimit and the like are allowed to
 * a sender whose ids match the target's real or saved ones, so a caller can
 * never signal the worker that acts for it; and no check of procfs reads an
 * accessor's real or saved ids. setresuid sets the fs id to the effective
 * one: the fs id after it. */
/* setfsuid/setfsgid say nothing of a failure but by the id they leave. */
static int fs_id_set(long nr, unsigned id)
{
	syscall(nr, id);
	if ((unsigned)syscall(nr, -1) == id)
		return 0;
	errno = EPERM;
	return -1;
}

int caller_ids_set(uid_t euid, uid_t fsuid, gid_t egid, gid_t fsgid)
{
	if (syscall(SYS_setresgid, (gid_t)-1, egid, (gid_t)-1) ||
	    (fsgid != egid && fs_id_set(SYS_setfsgid, fsgid)) ||
	    syscall(SYS_setresuid, (uid_t)-1, euid, (uid_t)-1) ||
	    (fsuid != euid && fs_id_set(SYS_setfsuid, fsuid)))
		return -1;
	return 0;
}

int caller_enter(const struct caller *c)
{
	if (same_as_daemon(c))
		return 0;
	/* Order: groups and ids while still privileged (capabilities stay
	 * across id changes: caller_init), then caps, which capset pins to
	 * exactly what the caller has. */
	switched = 1;
	if (groups_set(c) || caller_ids_set(c->euid, c->uid, c->egid, c->gid))
		goto fail;
	if (caps_set_effective(c->cap_eff & daemon_prm))
		goto fail;
	return 0;
fail:
	log_err("cannot switch to caller %d credentials: %s", c->tid, strerror(errno));
	caller_leave();
	return -EACCES;
}

void caller_leave(void)
{
	if (!switched)
		return;
	switched = 0;
	/* A worker that kept any of a caller's identity would serve the next
	 * caller with it: stop, and let the supervisor start a server. */
	if (caps_set_effective(daemon_eff) ||
	    caller_ids_set(daemon_uid, daemon_uid, daemon_gid, daemon_gid)) {
		log_err("cannot return to the daemon's credentials: %s", strerror(errno));
		abort();
	}
	if (groups_held && !syscall(SYS_setgroups, (size_t)0, NULL))
		groups_held = 0;
}

int caller_begin(fuse_req_t req, unsigned ns_kinds, struct caller *c)
{
	int r;

	caller_load(req, c);
	if ((r = reader_ns_enter(c->tid, ns_kinds, &c->ns)))
		return r;
	if ((r = caller_enter(c)))
		reader_ns_leave(&c->ns);
	else
		acting = c;
	return r;
}

const struct caller *caller_current(void)
{
	return acting;
}

void caller_step_out(void)
{
	caller_leave();
}

void caller_step_in(void)
{
	/* Whatever follows acts as the caller: never as the daemon instead. */
	if (acting && caller_enter(acting)) {
		log_err("cannot act as caller %d again", acting->tid);
		abort();
	}
}

void caller_end(struct caller *c)
{
	acting = NULL;
	caller_leave();
	reader_ns_leave(&c->ns);
}
