/* A server: the process that answers requests, with all the threads. Its
 * start and stop are one table (server_steps): started in order, stopped in
 * reverse from wherever the start got to. */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "cache/index/pid_view.h"
#include "cache/index/pidfd_kept.h"
#include "cache/index/pidgen.h"
#include "cache/index/proc_events.h"
#include "cache/nodes/node.h"
#include "cache/nodes/node_record.h"
#include "fs/caller/fair.h"
#include "fs/caller/ns_helper.h"
#include "fs/caller/reader_ns.h"
#include "fs/daemon/daemon.h"
#include "fs/daemon/steps.h"
#include "fs/daemon/timers.h"
#include "fs/entries/name_class.h"
#include "fs/lib/log.h"
#include "fs/lib/settings.h"
#include "fs/request/entry.h"
#include "fs/request/invalidate.h"
#include "fs/request/poll_watch.h"
#include "fs/request/read_wait.h"
#include "fs/request/snapshot.h"
#include "fs/resources/resources.h"
#include "fs/transport/drain.h"
#include "fs/transport/transport.h"
#include "fs/transport/uring.h"

#define IDLE_WORKERS 4

struct server {
	struct fuse_session *se;
	struct fuse_cmdline_opts *cmd;
	const struct options *o;
	enum supervisor_role role;
	int executed;
	struct proc_event_hooks hooks;
	const char *events_mode;
	int caches_unknown; /* resumed without the node table before (node_record.h) */
};

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

/* ---- the steps ---- */

/* The helpers' maker is forked while this process has one thread. */
static int start_helpers(void *ctx)
{
	int r = ns_helper_init(pf.srcfd, pf.selfproc);

	(void)ctx;
	if (r)
		log_warn("no helpers for callers in other user or time namespaces: %s", strerror(-r));
	return 0;
}

static void stop_helpers(void *ctx)
{
	(void)ctx;
	ns_helper_stop();
}

/* After that fork, before any worker: its sampler takes the daemon's credentials. */
static int start_resources(void *ctx)
{
	struct server *s = ctx;
	int r = resources_init(s->o->res_mode, s->o->cgroup_root, pf.selfproc);

	if (r)
		log_warn("resources: %s: every file is the host's", strerror(-r));
	return 0;
}

/* Of the fds the daemon keeps for its own work, the share of kept pidfds
 * (cache/index/pidfd_kept.h): 64 of the fewest it keeps (256). */
#define PIDFD_KEPT_DIVISOR 4

/* Each caller's share of the daemon's fds and threads (fs/caller/fair.h), from
 * the fd limit it starts with and the threads that will serve. */
static int start_shares(void *ctx)
{
	struct server *s = ctx;
	struct fair_config c = { .handles_per_uid = s->o->max_handles_per_uid,
				 .handles_per_container = s->o->max_handles_per_container,
				 .busy_per_uid = s->o->max_busy_per_uid };
	struct fair_limits l;
	struct rlimit rl;

	c.fd_limit = getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur == RLIM_INFINITY ? 1024 : rl.rlim_cur;
	c.fuse_workers = s->cmd->singlethread ? 1 : s->cmd->max_threads;
	if (s->o->uring_mode != URING_OFF) {
		c.ring_queues = uring_queue_count();
		c.ring_threads = s->o->uring_threads;
	}
	fair_init(&c, uring_thread_queue);
	fair_limits_of(&c, &l);
	/* a share of the fds the daemon keeps for its own work */
	if (pidfd_kept_init(l.fd_reserve / PIDFD_KEPT_DIVISOR))
		log_warn("no pidfds kept: out of memory");
	return 0;
}

static void stop_shares(void *ctx)
{
	(void)ctx;
	pidfd_kept_destroy();
}

/* A stop ends the requests' waits for the kernel's events too. */
static const struct read_wait_stop read_waits_drained = { drain_read_begin, drain_read_end,
							  drain_stopping };

static int start_signals(void *ctx)
{
	struct server *s = ctx;

	if (fuse_set_signal_handlers(s->se) || drain_init(s->se, proc_events_stop_notices))
		return -1;
	read_wait_set_stop(&read_waits_drained);
	return 0;
}

static void stop_signals(void *ctx)
{
	drain_stop();
	fuse_remove_signal_handlers(((struct server *)ctx)->se);
}

/* Threads die in fork(): the node table's resize worker and the event
 * threads start only in the process that serves. */
static int start_nodes(void *ctx)
{
	(void)ctx;
	if (node_table_init(name_class_root())) {
		log_err("cannot create the node table");
		return -1;
	}
	node_set_fixed_resolver(entry_resolve_fixed);
	return 0;
}

static void stop_nodes(void *ctx)
{
	(void)ctx;
	node_table_destroy();
}

/* The ids the kernel holds from the server before go on naming the same
 * entries here (cache/nodes/node_record.h). */
static int take_nodes_before(void *ctx)
{
	struct server *s = ctx;
	long n = s->role != SERVE_RESUMED || supervisor_nodes_fd() < 0
			 ? 0 : node_record_load(supervisor_nodes_fd(), entry_complete_record);

	if (n > 0)
		log_info("took %ld nodes over from the server before", n);
	/* The server before was killed: the kernel may keep names it cached
	 * until events that server got and this one will not. */
	s->caches_unknown = s->role == SERVE_RESUMED && n <= 0;
	if (n > 0 && s->o->snapshot)
		snapshot_inherited();
	return 0;
}

/* Every request answered: what the kernel holds now is for the next server. */
static void leave_nodes(void *ctx)
{
	long n = supervisor_nodes_fd() < 0 ? 0 : node_record_save(supervisor_nodes_fd());

	(void)ctx;
	if (n < 0)
		log_warn("cannot leave the node table to the next server: %s", strerror((int)-n));
}

static int start_poll_watches(void *ctx)
{
	(void)ctx;
	return poll_watch_start();
}

/* Once no request is served: the pollers poll again, and the next server
 * watches for them. */
static void stop_poll_watches(void *ctx)
{
	(void)ctx;
	poll_watch_stop();
}

static int start_invalidation(void *ctx)
{
	struct server *s = ctx;

	invalidate_init(s->se, &s->hooks);
	invalidate_set_wait_guard(transport_begin_wait, transport_end_wait);
	return 0;
}

static int start_events(void *ctx)
{
	struct server *s = ctx;
	struct proc_events_config events = {
		.disabled = (s->o->events && !strcmp(s->o->events, "off")) || !events_match_source(),
		.rcvbuf = s->o->event_rcvbuf,
		.fallback_ms = s->o->scan_ms,
	};

	s->events_mode = proc_events_start(&events, &s->hooks);
	return 0;
}

static void stop_events(void *ctx)
{
	(void)ctx;
	proc_events_stop();
}

static int start_transport(void *ctx)
{
	struct server *s = ctx;

	if (transport_attach(s->se, s->o->uring_mode, s->o->uring_threads, s->cmd->mountpoint,
			     s->role == SERVE_RESUMED, s->executed, supervisor_connection_ready)) {
		log_err("cannot take over the session's I/O");
		return -1;
	}
	return 0;
}

static void stop_transport(void *ctx)
{
	(void)ctx;
	transport_detach();
}

/* A resumed server: the connection is set up, the kernel's INIT long answered. */
static int start_resume(void *ctx)
{
	struct server *s = ctx;

	if (s->role == SERVE_RESUMED) {
		/* Whether the INIT before asked for passthrough is not known here,
		 * nor which snapshots the kernel still holds open (one an inode). */
		if (pf.snapshot)
			log_warn("snapshot: off until the next mount: this server took the "
				 "connection over");
		pf.snapshot = 0;
		supervisor_replay_init(s->se);
		transport_resume();
	}
	return 0;
}

static void announce(const struct server *s);

/* Before the listener, as before: the tests wait for this line. */
static int start_announce(void *ctx)
{
	announce(ctx);
	return 0;
}

static int start_listener(void *ctx)
{
	struct server *s = ctx;

	if (proc_events_run())
		log_err("cannot start the event listener");
	else if (s->caches_unknown)
		proc_events_caches_unknown();
	return 0;
}

static int start_timers(void *ctx)
{
	int r = timers_start();

	(void)ctx;
	if (r)
		log_warn("no periodic sweeps: %s", strerror(-r));
	return 0;
}

static void stop_timers(void *ctx)
{
	(void)ctx;
	timers_stop();
}

/* In order; stopped in reverse: the transport detached (every request
 * answered) before the events stop and the node table is left to the next
 * server, the helpers last. */
static const struct step server_steps[] = {
	{ "helpers", start_helpers, stop_helpers },
	{ "resources", start_resources, NULL },
	{ "shares", start_shares, stop_shares },
	{ "signals", start_signals, stop_signals },
	{ "node table", start_nodes, stop_nodes },
	{ "node record", take_nodes_before, leave_nodes },
	{ "invalidation", start_invalidation, NULL },
	{ "process events", start_events, stop_events },
	{ "poll watches", start_poll_watches, stop_poll_watches },
	{ "transport", start_transport, stop_transport },
	{ "resume", start_resume, NULL },
	{ "announce", start_announce, NULL },
	{ "event listener", start_listener, NULL },
	{ "timers", start_timers, stop_timers },
};

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

static void announce(const struct server *s)
{
	const struct options *o = s->o;

	log_info("%s %s%s%s at %s over %s (process index: %s, generations: %s)",
		 s->role == SERVE_RESUMED ? "serving again: mirroring" : "mirroring",
		 o->pidns ? "pid namespace " : o->source ? o->source : "/proc", o->pidns ? o->pidns : "",
		 o->hidepid || o->subset ? " with procfs options" : "", s->cmd->mountpoint,
		 transport_describe(), s->events_mode, pidgen_method());
	if (pf.snapshot)
		log_info("snapshot: each open of a file reads what it held at its open, made for "
			 "its opener: a file held open and read again shows the content of its "
			 "open, not of now (for tools that reopen: ps, pgrep, node_exporter; not "
			 "for top, free -s or sysinfo)");
}

int server_run(struct fuse_session *se, struct fuse_cmdline_opts *cmd, const struct options *o,
	       enum supervisor_role role, int executed)
{
	struct server s = { .se = se, .cmd = cmd, .o = o, .role = role, .executed = executed };
	size_t started = steps_start(server_steps, STEPS_COUNT(server_steps), &s);
	int r = 1;

	if (started == STEPS_COUNT(server_steps)) {
		/* A positive value is the signal that ended the loop (SIGTERM from
		 * "systemctl stop", kill, or the supervisor): a normal end. */
		r = serve(se, cmd) < 0 ? 1 : 0;
	}
	steps_stop(server_steps, started, &s);
	return r;
}
