#include "fs/ops/caller.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/capability.h>

#include "cache/pidgen.h"
#include "cache/proc_fields.h"
#include "cache/procfile.h"
#include "fs/log.h"
#include "fs/ops/group_cache.h"

static int self_proc = -1;
static uint64_t daemon_eff;     /* effective set to restore */
static uint64_t daemon_prm;     /* permitted set: the most a caller may get */
static uint64_t daemon_inh;

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

int caller_init(int selfproc)
{
	self_proc = selfproc;
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
	char buf[4096];

	if (procfile_read(self_proc, c->tid, "status", buf, sizeof(buf)) <= 0)
		return procfile_out_of_resources(errno) ? -errno : -ENOENT;
	c->tgid = status_tgid(buf);
	c->ngroups = status_groups(buf, c->groups, CALLER_MAX_GROUPS);
	return 0;
}

/* capget() reads another thread's capabilities in one syscall, so they are
 * always current; only groups and tgid need the status file. */
static int load_caps(struct caller *c)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, c->tid };
	struct __user_cap_data_struct d[2] = { { 0 } }; /* valgrind sees only d[0] written */

	if (syscall(SYS_capget, &h, d))
		return -errno;
	c->cap_eff = d[0].effective | (uint64_t)d[1].effective << 32;
	/* Capabilities act in their holder's user namespace: a container's root
	 * has none over the host's processes, so none are taken here. Checked
	 * on every request that has any: unshare(CLONE_NEWUSER) gives a full
	 * set at once. */
	if (c->cap_eff && !reader_ns_is_daemons(RNS_USER, reader_ns_of(c->tid, RNS_USER)))
		c->cap_eff = 0;
	return 0;
}

static int same_as_daemon(const struct caller *c);

/* Groups (and tgid) from the cache, else from the caller's status; none if
 * the caller is gone. */
static void load_groups(struct caller *c)
{
	if (group_cache_get(c) == 0)
		return;
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

	pidgen_begin(); /* every request starts here */
	c->tid = ctx->pid;
	c->tgid = 0;
	c->uid = ctx->uid;
	c->gid = ctx->gid;
	c->cap_eff = 0;
	c->ngroups = 0;
	if (c->tid <= 0 || load_caps(c) < 0) {
		c->tid = 0;
		c->cap_eff = 0;
		return;
	}
	/* Groups only matter when the caller is switched to. */
	if (!same_as_daemon(c))
		load_groups(c);
}

/* Nothing to switch: the caller is as privileged as the daemon, or the
 * daemon runs unprivileged (a user's own mount, without allow_other: its
 * callers are that user, and the daemon could not take another identity). */
static int same_as_daemon(const struct caller *c)
{
	const uint64_t id_caps = 1ULL << CAP_SETUID | 1ULL << CAP_SETGID;

	if ((daemon_prm & id_caps) != id_caps)
		return 1;
	return c->uid == 0 && c->gid == 0 && (c->cap_eff & daemon_eff) == daemon_eff;
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

int caller_enter(const struct caller *c)
{
	if (same_as_daemon(c))
		return 0;
	/* Order: groups and gid while still privileged, then uid, then caps.
	 * setfsuid() clears the fs capabilities by itself; capset pins the
	 * effective set to exactly what the caller has. */
	if (groups_set(c))
		goto fail;
	setfsgid(c->gid);
	setfsuid(c->uid);
	switched = 1;
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
	if (caps_set_effective(daemon_eff))
		log_err("cannot restore capabilities: %s", strerror(errno));
	setfsuid(0);
	setfsgid(0);
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
	return r;
}

void caller_end(struct caller *c)
{
	caller_leave();
	reader_ns_leave(&c->ns);
}
