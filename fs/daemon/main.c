/* procfast: a FUSE mirror of /proc. Parses the command line and dispatches
 * to the process's role (daemon.h): supervisor, executed server, or helper. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <mntent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs/daemon/daemon.h"
#include "fs/daemon/options.h"
#include "fs/daemon/privileges.h"
#include "fs/lib/fusectl.h"
#include "fs/lib/log.h"
#include "fs/supervisor/handover.h"
#include "fs/supervisor/supervisor.h"
#include "fs/supervisor/takeover.h"
#include "fs/transport/transport.h"

static void usage(const char *prog)
{
	printf("usage: %s [options] [procfast] MOUNTPOINT\n\n", prog);
	options_help();
	printf("\n");
	fuse_cmdline_help();
	fuse_lowlevel_help();
}

/* libfuse's workers when -o max_threads= is not given, rather than libfuse's
 * 10: a uid may have half of them busy (fs/caller/fair.h), and half of 10 is
 * refused to one user's few readers at once (16 readers walking the mount
 * made 22 requests in 100,000 refused); they start only as
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

/* A process that holds no mount yet checks what most often stops one. */
static int check_mount_point(const struct fuse_cmdline_opts *cmd, const struct options *o)
{
	if (preflight(cmd->mountpoint) || transport_preflight(o->uring_mode))
		return -1;
	if (already_procfast(cmd->mountpoint)) {
		fprintf(stderr, "procfast: %s: already a procfast mount\n", cmd->mountpoint);
		return -1;
	}
	return 0;
}

/* -1: go on to a role; else the exit status. */
static int parse(struct daemon *d)
{
	struct fuse_cmdline_opts *cmd = d->cmd;

	if (options_parse(d->args, d->o) || fuse_parse_cmdline(d->args, cmd))
		return 1;
	/* libfuse's default, or one it would not take: ours */
	if (!d->o->has_max_threads || !cmd->max_threads || cmd->max_threads > 100000)
		cmd->max_threads = WORKERS_DEFAULT;
	if (cmd->show_help) {
		usage(d->argv[0]);
		return 0;
	}
	if (cmd->show_version) {
		printf("procfast version %s\n", PROCFAST_VERSION);
		fflush(stdout); /* libfuse's lines come from a child process */
		fuse_lowlevel_version();
		return 0;
	}
	if (!cmd->mountpoint) {
		fprintf(stderr, "procfast: no mount point given (see --help)\n");
		return 1;
	}
	return -1;
}

static int dispatch(struct daemon *d)
{
	int r;

	/* Two malloc arenas: worker threads come and go, and one arena each
	 * would keep their freed memory from the system. */
	mallopt(M_ARENA_MAX, 2);
	if (d->o->takeover && d->handed->session_fd < 0 && d->serve == SUPERVISOR_DONE &&
	    (r = takeover_succeed(d->o->control, d->cmd->foreground, d->o->pidfile, d->argv)))
		return r == 1 ? 0 : 1;
	if (d->handed->session_fd < 0 && check_mount_point(d->cmd, d->o))
		return 1;
	/* A supervised server reads through its own clones of the session fd
	 * (supervisor.c). */
	if (!d->o->no_restart)
		d->cmd->clone_fd = 1;
	if (d->serve != SUPERVISOR_DONE)
		return role_server(d);
	if (d->o->daemon)
		return role_helper(d);
	return role_supervisor(d);
}

int main(int argc, char *argv[])
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct fuse_cmdline_opts cmd = { 0 };
	struct handover handed;
	struct options o = { 0 };
	struct daemon d = { .argc = argc, .argv = argv, .args = &args, .cmd = &cmd, .o = &o,
			    .handed = &handed, .control = -1 };
	int r;

	/* What the procfast that executed us handed on (an upgrade, a
	 * supervisor starting a server), if anything. */
	if ((r = handover_take(&handed)))
		log_err("what was handed over cannot be read whole: %s", strerror(-r));
	d.serve = supervisor_serve_role(&handed);
	/* Before any thread or child: every process of the daemon inherits it. */
	if ((r = privileges_drop_keyrings()) && r != -ENOSYS)
		log_warn("cannot leave the session keyring: %s", strerror(-r));
	fusectl_dir(); /* while this process may mount one of its own; inherited too */
	if ((r = parse(&d)) < 0)
		r = dispatch(&d);
	handover_forget(&handed);
	free(cmd.mountpoint);
	options_free(&o);
	fuse_opt_free_args(&args);
	return r;
}
