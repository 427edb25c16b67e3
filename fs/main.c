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
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <linux/magic.h>

#include "cache/node.h"
#include "cache/pidgen.h"
#include "cache/proc_events.h"
#include "cache/tgid_index.h"
#include "fs/log.h"
#include "fs/options.h"
#include "fs/privileges.h"
#include "fs/procfast.h"

static void usage(const char *prog)
{
	printf("usage: %s [options] [procfast] MOUNTPOINT\n\n", prog);
	options_help();
	printf("\n");
	fuse_cmdline_help();
	fuse_lowlevel_help();
}

/* The source must be a procfs: anything else would be mirrored as if it were. */
static int open_source(const char *source)
{
	struct statfs sf;
	int fd = open(source, O_PATH | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0) {
		fprintf(stderr, "procfast: source %s: %s\n", source, strerror(errno));
		return -1;
	}
	if (fstatfs(fd, &sf) || sf.f_type != PROC_SUPER_MAGIC) {
		fprintf(stderr, "procfast: source %s is not a procfs\n", source);
		close(fd);
		return -1;
	}
	return fd;
}

/* Pids in the source are the daemon's own when its "self" names us. */
static int source_in_our_pid_ns(int srcfd)
{
	char buf[32];
	ssize_t n = readlinkat(srcfd, "self", buf, sizeof(buf) - 1);

	if (n <= 0)
		return 0;
	buf[n] = '\0';
	return atoi(buf) == getpid();
}

static int setup(const struct options *o)
{
	int same_ns;

	pf.source = o->source;
	pf.read_only = o->read_only;
	pf.no_dedup = o->no_dedup;
	pf.entry_timeout = o->entry_timeout;
	pf.attr_timeout = o->attr_timeout;
	pf.srcfd = open_source(o->source);
	if (pf.srcfd < 0)
		return -1;
	pf.selfproc = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (pf.selfproc < 0) {
		fprintf(stderr, "procfast: /proc: %s\n", strerror(errno));
		return -1;
	}
	/* Worker threads start with no supplementary groups and take the
	 * caller's per request. */
	if (geteuid() == 0 && setgroups(0, NULL))
		log_warn("setgroups: %s", strerror(errno));
	same_ns = source_in_our_pid_ns(pf.srcfd);
	pidgen_init(pf.srcfd, same_ns);
	tgid_index_init(pf.srcfd);
	thread_dir_init(same_ns);
	if (caller_init(pf.selfproc) || root_dir_init()) {
		fprintf(stderr, "procfast: cannot initialise\n");
		return -1;
	}
	return 0;
}

#define IDLE_WORKERS 4

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
	if (cmd->max_threads && cmd->max_threads <= 100000) /* else libfuse's default */
		fuse_loop_cfg_set_max_threads(cfg, cmd->max_threads);
	r = fuse_session_loop_mt(se, cfg);
	fuse_loop_cfg_destroy(cfg);
	return r;
}

int main(int argc, char *argv[])
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct fuse_cmdline_opts cmd = { 0 };
	struct fuse_session *se = NULL;
	struct proc_event_hooks hooks = { 0 };
	struct proc_events_config events = { 0 };
	const char *mode;
	struct options o;
	int ret = 1;

	if (options_parse(&args, &o) || fuse_parse_cmdline(&args, &cmd))
		goto out;
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
	if (already_procfast(cmd.mountpoint)) {
		fprintf(stderr, "procfast: %s: already a procfast mount\n", cmd.mountpoint);
		goto out;
	}
	if (setup(&o))
		goto out;
	events.disabled = o.events && !strcmp(o.events, "off");
	events.rcvbuf = o.event_rcvbuf;
	events.fallback_ms = o.scan_ms;
	se = fuse_session_new(&args, &procfast_ops, sizeof(procfast_ops), NULL);
	if (!se)
		goto out;
	if (fuse_set_signal_handlers(se))
		goto out_session;
	invalidate_init(se, &hooks);
	mode = proc_events_start(&events, &hooks);
	if (fuse_session_mount(se, cmd.mountpoint))
		goto out_handlers;
	log_set_debug(cmd.debug);
	if (fuse_daemonize(cmd.foreground))
		goto out_unmount;
	/* Mounted, events subscribed, and no thread started yet (capabilities
	 * are per thread): from here on only what serving needs. */
	if (privileges_drop())
		goto out_unmount;
	/* Threads die in fork(): the node table's resize worker and the event
	 * threads start only in the process that serves. */
	if (node_table_init()) {
		log_err("cannot create the node table");
		goto out_unmount;
	}
	if (!cmd.foreground)
		log_to_syslog();
	log_info("mirroring %s at %s (process index: %s, generations: %s)", pf.source,
		 cmd.mountpoint, mode, pidgen_method());
	if (proc_events_run())
		log_err("cannot start the event listener");
	ret = serve(se, &cmd) ? 1 : 0;
	proc_events_stop();
out_unmount:
	fuse_session_unmount(se);
out_handlers:
	fuse_remove_signal_handlers(se);
out_session:
	fuse_session_destroy(se);
	proc_events_stop();
	node_table_destroy();
	root_dir_destroy();
	thread_dir_destroy();
out:
	free(cmd.mountpoint);
	options_free(&o);
	fuse_opt_free_args(&args);
	return ret;
}
