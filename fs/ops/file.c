/* File contents: every open is a source open made as the caller, every read
 * and write a pread/pwrite on it as the caller of that request.
 *
 * direct_io because procfs reports st_size 0: a cached read would stop there
 * and every file would read empty. Reads keep the caller's credentials too,
 * since procfs decides some content at read time (PID/stat hides wchan and
 * code addresses from callers that may not ptrace the task).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "fs/cleanup.h"
#include "fs/ops/caller.h"
#include "fs/ops/entry.h"
#include "fs/ops/ops.h"
#include "fs/ops/settings.h"

/* Flags the source open may honour; creation is refused separately. */
#define PASSED_OPEN_FLAGS (O_ACCMODE | O_APPEND | O_TRUNC | O_NONBLOCK | O_DSYNC | O_SYNC | O_NOATIME)

static int writes(int flags)
{
	return (flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC);
}

void pf_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct node *n = node_from_ino(ino);
	__do_close int fd = -1;
	struct caller c;
	int r;

	if (pf.read_only && writes(fi->flags))
		return reply_err(req, -EROFS);
	if ((r = caller_begin(req, reader_ns_kinds(n->cls, 1), &c)))
		return reply_err(req, r);
	if (c.ns.foreign) {
		/* never the daemon's own namespace's answer for the caller's */
		caller_end(&c);
		return reply_err(req, -EPERM);
	}
	/* A link target is opened through its link, as procfs's magic links do. */
	fd = openat(pf.srcfd, n->path, (fi->flags & PASSED_OPEN_FLAGS) | O_CLOEXEC | O_NOCTTY |
		    (n->kind == NODE_LINK_TARGET ? 0 : O_NOFOLLOW));
	r = node_walk_error(n, node_error(n, fd < 0 ? -errno : 0));
	caller_end(&c);
	if (r)
		return reply_err(req, r);
	fi->fh = (uint64_t)fd;
	fi->direct_io = 1;
	fi->keep_cache = 0;
	if (fuse_reply_open(req, fi) == -ENOENT)
		return; /* interrupted: fd closes on scope exit */
	move_fd(&fd);
}

/* Some procfs files are streams (no pread/pwrite: ESPIPE); for them the
 * offset is meaningless and the plain call is what the caller's was. */
static ssize_t read_at(int fd, char *buf, size_t size, off_t off)
{
	ssize_t n = pread(fd, buf, size, off);

	return n < 0 && errno == ESPIPE ? read(fd, buf, size) : n;
}

static ssize_t write_at(int fd, const char *buf, size_t size, off_t off)
{
	ssize_t n = pwrite(fd, buf, size, off);

	return n < 0 && errno == ESPIPE ? write(fd, buf, size) : n;
}

void pf_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	__do_free char *buf = malloc(size ? size : 1);
	struct caller c;
	ssize_t n;
	int r;

	if (!buf)
		return reply_err(req, -ENOMEM);
	/* Some entries are evaluated at each read (a uts name, a cgroup path). */
	if ((r = caller_begin(req, node_from_ino(ino)->cls->reader_ns & RNS_ENTERABLE, &c)))
		return reply_err(req, r);
	n = read_at((int)fi->fh, buf, size, off);
	r = n < 0 ? -errno : 0;
	caller_end(&c);
	if (r)
		return reply_err(req, r);
	fuse_reply_buf(req, buf, (size_t)n);
}

void pf_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
	      struct fuse_file_info *fi)
{
	struct caller c;
	ssize_t n;
	int r;

	if (pf.read_only)
		return reply_err(req, -EROFS);
	if ((r = caller_begin(req, node_from_ino(ino)->cls->reader_ns & RNS_ENTERABLE, &c)))
		return reply_err(req, r);
	n = write_at((int)fi->fh, buf, size, off);
	r = n < 0 ? -errno : 0;
	caller_end(&c);
	if (r)
		return reply_err(req, r);
	fuse_reply_write(req, (size_t)n);
}

void pf_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	close((int)fi->fh);
	fuse_reply_err(req, 0);
}
