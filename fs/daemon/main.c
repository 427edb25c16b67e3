/* procfast: a FUSE mirror of /proc. Start-up, mount and the request loop. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <malloc.h>
#include <mntent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>


#include "cache/index/pid_view.h"
#include "cache/index/pidgen.h"
#include "cache/index/proc_events.h"
#include "cache/index/tgid_index.h"
#include "cache/nodes/node.h"
#include "cache/nodes/node_record.h"
#include "fs/caller/caller.h"
#include "fs/caller/fair.h"
#include "fs/caller/ns_helper.h"
#include "fs/caller/reader_ns.h"
#include "fs/daemon/options.h"
#include "fs/daemon/privileges.h"
#include "fs/daemon/source.h"
#include "fs/entries/name_class.h"
#include "fs/lib/cleanup.h"
#include "fs/lib/log.h"
#include "fs/lib/settings.h"
#include "fs/request/entry.h"
#include "fs/request/invalidate.h"
#include "fs/request/ops.h"
#include "fs/request/root_dir.h"
#include "fs/request/thread_dir.h"
#include "fs/resources/resources.h"
#include "fs/supervisor/auto_unmount.h"
#include "fs/supervisor/control.h"
#include "fs/supervisor/handover.h"
#include "fs/supervisor/pidfile.h"
#include "fs/supervisor/supervisor.h"
#include "fs/supervisor/takeover.h"
#include "fs/transport/drain.h"
#include "fs/transport/fuse_conn.h"
#include "fs/transport/transport.h"
#include "fs/transport/uring.h"

static void usage(const char *prog)
{
	printf("usage: %s [options] [procfast] MOUNTPOINT\n\n", prog);
	options_help();
	printf("\n");
	fuse_cmdline_help();
	fuse_lowlevel_help();
}

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

/* The proc connector names processes by their pids in the initial pid
 * namespace; a daemon in another one may still receive the events (another
 * listener subscribed), so they describe the source only when the daemon is
 * in the initial namespace and the source too, or is a view whose pids are
 * translated (pid_view.c). */
#define PROC_PID_INIT_INO 0xEFFFFFFCU

static int events_match_source(void)
{
	struct stat st;

	return (pf.same_pid_ns || pid_view_active()) &&
	       !fstatat(pf.selfproc, "self/ns/pid", &st, 0) && st.st_ino == PROC_PID_INIT_INO;
}

static int setup(const struct options *o)
{
	pf.read_only = o->read_only;
	pf.no_dedup = o->no_dedup;
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
	if (caller_init(pf.selfproc) || reader_ns_init(pf.selfproc) || root_dir_init()) {
		fprintf(stderr, "procfast: cannot initialise\n");
		return -1;
	}
	return 0;
}

#define IDLE_WORKERS 4
/* libfuse's workers when -o max_threads= is not given, rather than libfuse's
 * 10: a uid may have half of them busy (fs/caller/fair.h), and half of 10 is
 * refused to one user's few readers at once (16 readers walking the mount
 * made 22 requests in 100,000 fail with EAGAIN); they start only as
 * requests wait, and all but IDLE_WORKERS end once idle. */
#define WORKERS_DEFAULT 32

/* Mounting procfast again on its own mount point would stack a second
 * daemon on top of the first: refuse, as a busy mount point. */
static int already_procfast(const char *mountpoint)
{
	char real[PATH_MAX];
	FILE *f;
	struct mntent *m;
	int found = 0;

	if (!realpath(mountpoint, real) || !(f = setmntent("/proc/self/mounts", "r")))
		return 0;
	while (!found && (m = getmntent(f)))
		found = !strcmp(m->mnt_dir, real) && !strcmp(m->mnt_type, "fuse.procfast");
	endmntent(f);
	return found;
}

/* One clear line for what most often stops a mount, before libfuse's own. */
static int preflight(const char *mountpoint)
{
	struct stat st;
	int fd;

	errno = 0;
	if (stat(mountpoint, &st) || !S_ISDIR(st.st_mode)) {
		fprintf(stderr, "procfast: mount point %s: %s\n", mountpoint,
			strerror(errno ? errno : ENOTDIR));
		return -1;
	}
	errno = 0;
	if (stat("/dev/fuse", &st) || !S_ISCHR(st.st_mode)) {
		fprintf(stderr, "procfast: /dev/fuse: %s (is the fuse module loaded?)\n",
			errno ? strerror(errno) : "not a character device");
		return -1;
	}
	fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "procfast: /dev/fuse: %s\n", strerror(errno));
		return -1;
	}
	close(fd);
	return 0;
}

static int serve(struct fuse_session *se, const struct fuse_cmdline_opts *cmd)
{
	struct fuse_loop_config *cfg;
	int r;

	if (cmd->singlethread)
		return fuse_session_loop(se);
	cfg = fuse_loop_cfg_create();
	if (!cfg)
		return -1;
	fuse_loop_cfg_set_clone_fd(cfg, cmd->clone_fd);
	/* Idle workers keep their stacks and malloc arenas: few are kept, so the
	 * daemon shrinks back after a burst (UINT_MAX: the option not given). */
	fuse_loop_cfg_set_idle_threads(cfg, cmd->max_idle_threads != UINT_MAX ? cmd->max_idle_threads
									       : IDLE_WORKERS);
	fuse_loop_cfg_set_max_threads(cfg, cmd->max_threads);
	r = fuse_session_loop_mt(se, cfg);
	fuse_loop_cfg_destroy(cfg);
	return r;
}

static void events_config(const struct options *o, struct proc_events_config *events)
{
	events->disabled = (o->events && !strcmp(o->events, "off")) || !events_match_source();
	events->rcvbuf = o->event_rcvbuf;
	events->fallback_ms = o->scan_ms;
}

/* What the FUSE face keeps only while it is used, let go every few seconds. */
static void sweep(void)
{
	reader_ns_trim();
	ns_helper_trim();
}

/* Each caller's share of the daemon's fds and threads (fs/caller/fair.h), from
 * the fd limit it starts with and the threads that will serve. */
static void shares_setup(const struct fuse_cmdline_opts *cmd, const struct options *o)
{
	struct fair_config c = { .handles_per_uid = o->max_handles_per_uid,
				 .handles_per_container = o->max_handles_per_container,
				 .busy_per_uid = o->max_busy_per_uid };
	struct rlimit rl;

	c.fd_limit = getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur == RLIM_INFINITY ? 1024 : rl.rlim_cur;
	c.fuse_workers = cmd->singlethread ? 1 : cmd->max_threads;
	if (o->uring_mode != URING_OFF) {
		c.ring_queues = uring_queue_count();
		c.ring_threads = o->uring_threads;
	}
	fair_init(&c, uring_thread_queue);
}

/* One server: the process that answers requests, with all the threads. */
/* The ids the kernel holds from the server before go on naming the same
 * entries here (cache/nodes/node_record.h). */
static void take_nodes_before(void)
{
	long n = supervisor_nodes_fd() < 0 ? 0 : node_record_load(supervisor_nodes_fd(), entry_complete_record);

	if (n > 0)
		log_info("took %ld nodes over from the server before", n);
}

/* Every request answered: what the kernel holds now is for the next server. */
static void leave_nodes(void)
{
	long n = supervisor_nodes_fd() < 0 ? 0 : node_record_save(supervisor_nodes_fd());

	if (n < 0)
		log_warn("cannot leave the node table to the next server: %s", strerror((int)-n));
}

static int run_server(struct fuse_session *se, struct fuse_cmdline_opts *cmd,
		      const struct options *o, enum supervisor_role role, int executed)
{
	struct proc_event_hooks hooks = { 0 };
	struct proc_events_config events = { 0 };
	const char *mode;
	int r;

	/* The helpers' maker is forked while this process has one thread. */
	if ((r = ns_helper_init(pf.srcfd, pf.selfproc)))
		log_warn("no helpers for callers in other user or time namespaces: %s", strerror(-r));
	/* after that fork, before any worker: its sampler takes the daemon's credentials */
	if ((r = resources_init(o->res_mode, o->cgroup_root, pf.selfproc)))
		log_warn("resources: %s: every file is the host's", strerror(-r));
	shares_setup(cmd, o);
	if (fuse_set_signal_handlers(se) || drain_init(se, proc_events_stop_notices))
		return 1;
	if (transport_attach(se, o->uring_mode, o->uring_threads, cmd->mountpoint,
			     role == SERVE_RESUMED, executed)) {
		log_err("cannot take over the session's I/O");
		return 1;
	}
	invalidate_init(se, &hooks);
	invalidate_set_wait_guard(transport_begin_wait, transport_end_wait);
	hooks.sweep = sweep;
	events_config(o, &events);
	mode = proc_events_start(&events, &hooks);
	/* Threads die in fork(): the node table's resize worker and the event
	 * threads start only in the process that serves. */
	if (node_table_init(name_class_root()) || name_class_check_tables()) {
		log_err("cannot create the node table");
		return 1;
	}
	node_set_fixed_resolver(entry_resolve_fixed);
	if (role == SERVE_RESUMED) {
		take_nodes_before();
		supervisor_replay_init(se);
		transport_resume();
	}
	log_info("%s %s%s%s at %s over %s (process index: %s, generations: %s)",
		 role == SERVE_RESUMED ? "serving again: mirroring" : "mirroring",
		 o->pidns ? "pid namespace " : o->source ? o->source : "/proc", o->pidns ? o->pidns : "",
		 o->hidepid || o->subset ? " with procfs options" : "", cmd->mountpoint,
		 transport_describe(), mode, pidgen_method());
	if (proc_events_run())
		log_err("cannot start the event listener");
	/* A positive value is the signal that ended the loop (SIGTERM from
	 * "systemctl stop", kill, or the supervisor): a normal end. */
	r = serve(se, cmd) < 0 ? 1 : 0;
	transport_detach();
	proc_events_stop();
	leave_nodes();
	ns_helper_stop();
	fuse_remove_signal_handlers(se);
	return r;
}

/* Our own mount, for the supervisor to end while it serves others. */
static struct fuse_session *own_session;
static const char *own_mountpoint;
static int own_resumed;
static unsigned own_conn; /* its fusectl number, to abort it (fuse_conn.h) */

/* Unmounted first: libfuse leaves a mount alone once its connection is
 * aborted. libfuse closes the session fd as it unmounts, and a copy keeps the
 * connection, and so its number, ours until it is aborted. */
static void unmount_own(void)
{
	__do_close int keep = dup(fuse_session_fd(own_session));

	if (own_resumed) /* libfuse unmounts only what it mounted */
		umount2(own_mountpoint, MNT_DETACH);
	else
		fuse_session_unmount(own_session);
	if (keep >= 0)
		fuse_conn_abort(keep, own_conn);
}

/* -o daemon=: mount, hand the mount over, and leave it to that daemon. */
static int hand_over(struct fuse_session *se, const struct options *o, const char *mountpoint,
		     int argc, char **argv)
{
	char real[PATH_MAX];
	int nsfd = -1, r;

	if (!realpath(mountpoint, real)) {
		fprintf(stderr, "procfast: mount point %s: %s\n", mountpoint, strerror(errno));
		return -1;
	}
	if (o->pidns && (nsfd = source_open_pidns(o->pidns)) < 0)
		return -1;
	if (fuse_session_mount(se, mountpoint)) {
		if (nsfd >= 0)
			close(nsfd);
		return -1;
	}
	r = control_hand_over(o->daemon, fuse_session_fd(se), nsfd, real, argc, argv);
	if (nsfd >= 0)
		close(nsfd);
	if (r) {
		fprintf(stderr, "procfast: daemon=%s: %s\n", o->daemon,
			r == -ENOENT || r == -ECONNREFUSED ? "no procfast daemon listens there"
			: r == -EIO ? "the daemon could not serve this mount (see its log)"
				    : strerror(-r));
		/* unless the daemon did (EINVAL: not a mount any more) */
		if (umount2(real, MNT_DETACH) && errno == EPERM)
			fuse_session_unmount(se);
		return -1;
	}
	return 0;
}

/* In a server the supervisor executed for a handed-over mount: pidns= is the
 * file it was handed. */
static int take_handed_pidns(struct options *o, int nsfd)
{
	char path[32];

	if (nsfd < 0)
		return 0;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", nsfd);
	free(o->pidns);
	return (o->pidns = strdup(path)) ? 0 : -1;
}

int main(int argc, char *argv[])
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct fuse_cmdline_opts cmd = { 0 };
	struct fuse_session *se = NULL;
	enum supervisor_role role = SERVE_FIRST, serve_only;
	char resume_path[32] = "";
	int resume_fd = -1, control = -1, nsfd = -1, rings_fd = -1, r;
	struct handover handed;
	struct options o;
	int ret = 1;

	/* What the procfast that executed us handed on (an upgrade, a
	 * supervisor starting a server), if anything. */
	if ((r = handover_take(&handed)))
		log_err("what was handed over cannot be read whole: %s", strerror(-r));
	serve_only = supervisor_serve_role(&handed);
	nsfd = handed.pidns_fd;
	rings_fd = handed.rings_fd;
	/* Before any thread or child: every process of the daemon inherits it. */
	if ((r = privileges_drop_keyrings()) && r != -ENOSYS)
		log_warn("cannot leave the session keyring: %s", strerror(-r));
	if (options_parse(&args, &o) || fuse_parse_cmdline(&args, &cmd))
		goto out;
	/* libfuse's default, or one it would not take: ours */
	if (!o.has_max_threads || !cmd.max_threads || cmd.max_threads > 100000)
		cmd.max_threads = WORKERS_DEFAULT;
	if (cmd.show_help) {
		usage(argv[0]);
		ret = 0;
		goto out;
	}
	if (cmd.show_version) {
		printf("procfast version %s\n", PROCFAST_VERSION);
		fflush(stdout); /* libfuse's lines come from a child process */
		fuse_lowlevel_version();
		ret = 0;
		goto out;
	}
	if (!cmd.mountpoint) {
		fprintf(stderr, "procfast: no mount point given (see --help)\n");
		goto out;
	}
	/* Two malloc arenas: worker threads come and go, and one arena each
	 * would keep their freed memory from the system. */
	mallopt(M_ARENA_MAX, 2);
	resume_fd = handed.session_fd;
	if (o.takeover && resume_fd < 0 && serve_only == SUPERVISOR_DONE &&
	    (r = takeover_succeed(o.control, cmd.foreground, o.pidfile, argv))) {
		ret = r == 1 ? 0 : 1;
		goto out;
	}
	if (resume_fd < 0 && (preflight(cmd.mountpoint) || transport_preflight(o.uring_mode)))
		goto out;
	if (resume_fd < 0 && already_procfast(cmd.mountpoint)) {
		fprintf(stderr, "procfast: %s: already a procfast mount\n", cmd.mountpoint);
		goto out;
	}
	if (serve_only != SUPERVISOR_DONE) {
		/* the supervisor holds the mount; this process only serves it */
		free(o.daemon);
		o.daemon = NULL;
		cmd.foreground = 1;
		if (take_handed_pidns(&o, nsfd))
			goto out;
	}
	/* A supervised server reads through its own clones of the session fd
	 * (supervisor.c). */
	if (!o.no_restart)
		cmd.clone_fd = 1;
	if (o.daemon) {
		se = fuse_session_new(&args, procfast_ops(supervisor_connection_ready), sizeof(struct fuse_lowlevel_ops), NULL);
		ret = se && !hand_over(se, &o, cmd.mountpoint, argc, argv) ? 0 : 1;
		goto out_session;
	}
	if (setup(&o))
		goto out;
	se = fuse_session_new(&args, procfast_ops(supervisor_connection_ready), sizeof(struct fuse_lowlevel_ops), NULL);
	if (!se)
		goto out;
	if (resume_fd >= 0)
		snprintf(resume_path, sizeof(resume_path), "/dev/fd/%d", resume_fd);
	if (o.auto_unmount && resume_fd < 0)
		auto_unmount_before_mount();
	if (fuse_session_mount(se, resume_fd >= 0 ? resume_path : cmd.mountpoint))
		goto out_session;
	own_session = se;
	own_mountpoint = cmd.mountpoint;
	own_resumed = resume_fd >= 0;
	/* not a handed-over mount's server: its path may name another mount here */
	own_conn = serve_only == SUPERVISOR_DONE ? fuse_conn_number(cmd.mountpoint) : 0;
	/* Made once mounted, so that every way out from here removes it. */
	if (o.control && resume_fd < 0 && (control = control_listen(o.control)) < 0) {
		fprintf(stderr, "procfast: control=%s: %s\n", o.control,
			control == -EADDRINUSE ? "a daemon listens there already" : strerror(-control));
		goto out_unmount;
	}
	log_set_debug(cmd.debug);
	/* An upgrade is in the background already, and keeps its pid. */
	if (fuse_daemonize(cmd.foreground || resume_fd >= 0))
		goto out_unmount;
	/* in the process that stays: the watcher waits for its end */
	if (o.auto_unmount && resume_fd < 0)
		auto_unmount_watch(cmd.mountpoint);
	/* Mounted and no thread started yet (capabilities are per thread): from
	 * here on, supervisor and servers keep only what serving needs. */
	if (privileges_drop())
		goto out_unmount;
	if (!cmd.foreground)
		log_to_syslog();
	if (serve_only == SUPERVISOR_DONE && pidfile_write(o.pidfile))
		goto out_unmount;
	/* before the servers are forked: they share the rings' buffers */
	transport_reserve(o.uring_mode, o.uring_threads, rings_fd);
	if (rings_fd >= 0) /* mapped, or not to be: the supervisor holds it */
		close(rings_fd);
	if (serve_only != SUPERVISOR_DONE)
		role = serve_only;
	else if (!o.no_restart)
		role = supervisor_run(se, argv, &handed, control, unmount_own, &ret);
	if (role != SUPERVISOR_DONE) {
		/* a server leaves the mount to its supervisor */
		if (privileges_seal())
			goto out_session_or_unmount;
		ret = run_server(se, &cmd, &o, role, serve_only != SUPERVISOR_DONE);
out_session_or_unmount:
		if (!o.no_restart)
			goto out_session;
	}
out_unmount:
	/* a successor serves our mounts now, and listens at our socket */
	if (!supervisor_handed_over()) {
		unmount_own();
		/* ours: made above, or handed on by the supervisor an upgrade replaced */
		if (o.control && (control >= 0 || role == SUPERVISOR_DONE))
			unlink(o.control);
	}
out_session:
	if (se)
		fuse_session_destroy(se);
	proc_events_stop();
	node_table_destroy();
	root_dir_destroy();
	thread_dir_destroy();
out:
	handover_forget(&handed);
	free(cmd.mountpoint);
	options_free(&o);
	fuse_opt_free_args(&args);
	return ret;
}
