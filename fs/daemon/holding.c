/* The start and stop of a process that holds a mount (a supervisor, or a
 * server a supervisor executed for a handed-over mount): one table of steps,
 * started in order and stopped in reverse from wherever the start got to. */
#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

#include "cache/index/pid_view.h"
#include "cache/index/pidgen.h"
#include "cache/index/tgid_index.h"
#include "fs/caller/caller.h"
#include "fs/caller/reader_ns.h"
#include "fs/daemon/daemon.h"
#include "fs/daemon/privileges.h"
#include "fs/daemon/source.h"
#include "fs/daemon/steps.h"
#include "fs/lib/cleanup.h"
#include "fs/lib/log.h"
#include "fs/lib/settings.h"
#include "fs/request/ops.h"
#include "fs/request/root_names.h"
#include "fs/request/thread_dir.h"
#include "fs/supervisor/auto_unmount.h"
#include "fs/supervisor/control.h"
#include "fs/supervisor/pidfile.h"
#include "fs/transport/fuse_conn.h"
#include "fs/transport/transport.h"

static char source_path[64];

/* Path operations (truncate, xattrs) reach a private instance through the
 * daemon's fd of it. */
static int open_source(const struct options *o)
{
	struct source_spec spec = { .path = o->source, .pidns = o->pidns, .hidepid = o->hidepid,
				    .subset = o->subset, .gid = o->gid };
	struct source src;
	int r;

	if (source_open(&spec, &src))
		return -1;
	pf.srcfd = src.root;
	pf.indexfd = src.index;
	if (source_is_private(&spec))
		snprintf(source_path, sizeof(source_path), "/proc/self/fd/%d", pf.srcfd);
	pf.source = source_is_private(&spec) ? source_path : o->source ? o->source : "/proc";
	pf.hide_level = o->hide_level;
	if ((r = pid_view_init(src.nsfd))) {
		fprintf(stderr, "procfast: pidns=%s: %s\n", o->pidns,
			r == -ESRCH ? "the pid namespace has no init process any more"
				    : r == -EPERM ? "cannot translate pids: no right to enter the namespace"
						  : strerror(-r));
		return -1;
	}
	return 0;
}

static int start_source(void *ctx)
{
	const struct options *o = ((struct daemon *)ctx)->o;

	pf.read_only = o->read_only;
	pf.snapshot = o->snapshot;
	pf.no_dedup = o->no_dedup;
	pf.no_poll = o->no_poll;
	pf.entry_timeout = o->entry_timeout;
	pf.attr_timeout = o->attr_timeout;
	if (open_source(o))
		return -1;
	pf.selfproc = source_own_procfs();
	if (pf.selfproc < 0) {
		fprintf(stderr, "procfast: /proc: %s\n", strerror(-pf.selfproc));
		return -1;
	}
	/* Worker threads start with no supplementary groups and take the
	 * caller's per request. */
	if (geteuid() == 0 && setgroups(0, NULL))
		log_warn("setgroups: %s", strerror(errno));
	pf.same_pid_ns = source_names_us(pf.srcfd);
	pidgen_init(pf.indexfd, pf.same_pid_ns);
	tgid_index_init(pf.indexfd);
	thread_dir_init(pf.same_pid_ns);
	if (caller_init(pf.selfproc) || reader_ns_init(pf.selfproc) || root_names_init()) {
		fprintf(stderr, "procfast: cannot initialise\n");
		return -1;
	}
	return 0;
}

static void stop_source(void *ctx)
{
	(void)ctx;
	root_names_destroy();
	thread_dir_destroy();
}

static int start_session(void *ctx)
{
	struct daemon *d = ctx;

	d->se = fuse_session_new(d->args, procfast_ops(),
				 sizeof(struct fuse_lowlevel_ops), NULL);
	return d->se ? 0 : -1;
}

static void stop_session(void *ctx)
{
	fuse_session_destroy(((struct daemon *)ctx)->se);
}

/* Our own mount, for the supervisor to end while it serves others. */
static struct fuse_session *own_session;
static const char *own_mountpoint;
static int own_resumed;
static unsigned own_conn; /* its fusectl number, to abort it (fuse_conn.h) */

/* Unmounted first: libfuse leaves a mount alone once its connection is
 * aborted. libfuse closes the session fd as it unmounts, and a copy keeps the
 * connection, and so its number, ours until it is aborted. */
void holding_unmount_own(void)
{
	__do_close int keep = dup(fuse_session_fd(own_session));

	if (own_resumed) /* libfuse unmounts only what it mounted */
		umount2(own_mountpoint, MNT_DETACH);
	else
		fuse_session_unmount(own_session);
	if (keep >= 0)
		fuse_conn_abort(keep, own_conn);
}

static int resumed(const struct daemon *d)
{
	return d->handed->session_fd >= 0;
}

static int start_mount(void *ctx)
{
	struct daemon *d = ctx;
	char resume_path[32] = "";

	if (resumed(d))
		snprintf(resume_path, sizeof(resume_path), "/dev/fd/%d", d->handed->session_fd);
	else if (d->o->auto_unmount)
		auto_unmount_before_mount();
	if (fuse_session_mount(d->se, resumed(d) ? resume_path : d->cmd->mountpoint))
		return -1;
	own_session = d->se;
	own_mountpoint = d->cmd->mountpoint;
	own_resumed = resumed(d);
	/* not a handed-over mount's server: its path may name another mount here */
	own_conn = d->serve == SUPERVISOR_DONE ? fuse_conn_number(d->cmd->mountpoint) : 0;
	return 0;
}

/* A successor serves our mounts now, and listens at our socket; a server
 * leaves the mount to its supervisor. */
static int mount_is_ours(const struct daemon *d)
{
	return !d->leave_mount && !supervisor_handed_over();
}

static void stop_mount(void *ctx)
{
	if (mount_is_ours(ctx))
		holding_unmount_own();
}

/* Made once mounted, so that every way out from here removes it. */
static int start_control(void *ctx)
{
	struct daemon *d = ctx;

	if (!d->o->control || resumed(d))
		return 0;
	if ((d->control = control_listen(d->o->control)) < 0) {
		fprintf(stderr, "procfast: control=%s: %s\n", d->o->control,
			d->control == -EADDRINUSE ? "a daemon listens there already"
						  : strerror(-d->control));
		return -1;
	}
	return 0;
}

/* Ours: made above, or handed on by the supervisor an upgrade replaced. */
static void stop_control(void *ctx)
{
	struct daemon *d = ctx;

	if (d->o->control && mount_is_ours(d) && (d->control >= 0 || d->role == SUPERVISOR_DONE))
		unlink(d->o->control);
}

static int start_background(void *ctx)
{
	struct daemon *d = ctx;

	log_set_debug(d->cmd->debug);
	/* An upgrade is in the background already, and keeps its pid. */
	if (fuse_daemonize(d->cmd->foreground || resumed(d)))
		return -1;
	/* in the process that stays: the watcher waits for its end */
	if (d->o->auto_unmount && !resumed(d))
		auto_unmount_watch(d->cmd->mountpoint);
	return 0;
}

/* Mounted and no thread started yet (capabilities are per thread): from
 * here on, supervisor and servers keep only what serving needs. */
static int start_privileges(void *ctx)
{
	struct daemon *d = ctx;

	if (privileges_drop())
		return -1;
	if (!d->cmd->foreground)
		log_to_syslog();
	return 0;
}

static int start_pidfile(void *ctx)
{
	struct daemon *d = ctx;

	return d->serve == SUPERVISOR_DONE && pidfile_write(d->o->pidfile) ? -1 : 0;
}

/* Before the servers are forked: they share the rings' buffers. */
static int start_rings(void *ctx)
{
	struct daemon *d = ctx;

	int fd = transport_reserve(d->o->uring_mode, d->o->uring_threads, d->handed->rings_fd);

	/* An executed server's memfd is its supervisor's to hold; a supervisor
	 * holds its own mount's (supervisor_run takes it from the hand-over). */
	if (fd >= 0 && d->serve != SUPERVISOR_DONE) {
		close(fd);
		fd = -1;
	}
	d->handed->rings_fd = fd;
	return 0;
}

static const struct step holding_steps[] = {
	{ "source", start_source, stop_source },
	{ "session", start_session, stop_session },
	{ "mount", start_mount, stop_mount },
	{ "control socket", start_control, stop_control },
	{ "background", start_background, NULL },
	{ "privileges", start_privileges, NULL },
	{ "pidfile", start_pidfile, NULL },
	{ "ring buffers", start_rings, NULL },
};

const size_t HOLDING_STEPS = STEPS_COUNT(holding_steps);

size_t holding_start(struct daemon *d)
{
	d->control = -1;
	return steps_start(holding_steps, HOLDING_STEPS, d);
}

void holding_stop(struct daemon *d, size_t started)
{
	steps_stop(holding_steps, started, d);
}
