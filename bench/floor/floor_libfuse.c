/* floor_libfuse [-f] MOUNTPOINT: the floor of a FUSE read over /dev/fuse (issue 11).
 *
 * The least a libfuse 3 server can do per request: one file, /stat, answered from
 * memory with direct I/O (as procfast answers PID/stat), on libfuse's multithreaded
 * loop. bench/floor.sh measures procfast against it; it is not part of procfast.
 * Standard libfuse options (-f, -d, -s, -o ...); without -f it daemonizes once
 * mounted. Unmounts on SIGTERM, SIGINT or SIGHUP (libfuse's signal handlers). */
#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define STAT_INO 2
#define STAT_NAME "stat"

#include "floor_text.h"

/* The kernel may keep names and attributes for a day: the floor is the request
 * that must reach the server (OPEN, READ, RELEASE), not the ones a cache avoids. */
static const double timeout = 86400.0;

static int fill_attr(fuse_ino_t ino, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	if (ino == FUSE_ROOT_ID) {
		st->st_mode = S_IFDIR | 0555;
		st->st_nlink = 2;
	} else if (ino == STAT_INO) {
		/* Size 0, as procfs and procfast report: direct I/O reads past it. */
		st->st_mode = S_IFREG | 0444;
		st->st_nlink = 1;
	} else {
		return ENOENT;
	}
	return 0;
}

static void floor_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fuse_entry_param e = { .ino = STAT_INO, .attr_timeout = timeout,
				      .entry_timeout = timeout };

	if (parent != FUSE_ROOT_ID || strcmp(name, STAT_NAME)) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	fill_attr(STAT_INO, &e.attr);
	fuse_reply_entry(req, &e);
}

static void floor_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct stat st;
	int err = fill_attr(ino, &st);

	(void)fi;
	if (err)
		fuse_reply_err(req, err);
	else
		fuse_reply_attr(req, &st, timeout);
}

static void floor_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (ino != STAT_INO) {
		fuse_reply_err(req, EISDIR);
		return;
	}
	if ((fi->flags & O_ACCMODE) != O_RDONLY) {
		fuse_reply_err(req, EACCES);
		return;
	}
	/* Every read reaches the server, as procfast's files must. */
	fi->direct_io = 1;
	fuse_reply_open(req, fi);
}

static void floor_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	size_t len = sizeof(text) - 1;

	(void)ino;
	(void)fi;
	if ((size_t)off >= len)
		fuse_reply_buf(req, NULL, 0);
	else
		fuse_reply_buf(req, text + off, size < len - off ? size : len - off);
}

static void floor_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	(void)fi;
	fuse_reply_err(req, 0);
}

/* Entries ".", "..", "stat"; the offset of an entry is its index + 1. */
static void floor_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			  struct fuse_file_info *fi)
{
	static const char *const names[] = { ".", "..", STAT_NAME };
	char buf[512];
	size_t used = 0;

	(void)fi;
	if (ino != FUSE_ROOT_ID) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	if (size > sizeof(buf))
		size = sizeof(buf);
	for (off_t i = off; i < 3; i++) {
		struct stat st = { .st_ino = i == 2 ? STAT_INO : FUSE_ROOT_ID };
		size_t n;

		st.st_mode = i == 2 ? S_IFREG : S_IFDIR;
		n = fuse_add_direntry(req, buf + used, size - used, names[i], &st, i + 1);
		if (n > size - used)
			break;
		used += n;
	}
	fuse_reply_buf(req, buf, used);
}

static const struct fuse_lowlevel_ops ops = {
	.lookup = floor_lookup,
	.getattr = floor_getattr,
	.open = floor_open,
	.read = floor_read,
	.release = floor_release,
	.readdir = floor_readdir,
};

static int serve(struct fuse_session *se, const struct fuse_cmdline_opts *opts)
{
	struct fuse_loop_config *cfg;
	int ret;

	if (opts->singlethread)
		return fuse_session_loop(se);
	cfg = fuse_loop_cfg_create();
	if (!cfg)
		return -1;
	fuse_loop_cfg_set_clone_fd(cfg, (unsigned int)opts->clone_fd);
	fuse_loop_cfg_set_idle_threads(cfg, opts->max_idle_threads);
	fuse_loop_cfg_set_max_threads(cfg, opts->max_threads);
	ret = fuse_session_loop_mt(se, cfg);
	fuse_loop_cfg_destroy(cfg);
	return ret;
}

int main(int argc, char **argv)
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct fuse_cmdline_opts opts;
	struct fuse_session *se;
	int ret = 1;

	if (fuse_parse_cmdline(&args, &opts))
		return 1;
	if (opts.show_help || opts.show_version || !opts.mountpoint) {
		printf("usage: %s [-f] [-d] [-s] [-o OPTIONS] MOUNTPOINT\n", argv[0]);
		fuse_cmdline_help();
		ret = opts.show_help || opts.show_version ? 0 : 2;
		goto out_args;
	}
	se = fuse_session_new(&args, &ops, sizeof(ops), NULL);
	if (!se)
		goto out_args;
	if (fuse_set_signal_handlers(se))
		goto out_session;
	if (fuse_session_mount(se, opts.mountpoint))
		goto out_signals;
	fuse_daemonize(opts.foreground);
	ret = serve(se, &opts) ? 1 : 0;
	fuse_session_unmount(se);
out_signals:
	fuse_remove_signal_handlers(se);
out_session:
	fuse_session_destroy(se);
out_args:
	free(opts.mountpoint);
	fuse_opt_free_args(&args);
	return ret;
}
