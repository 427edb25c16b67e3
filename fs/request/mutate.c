/* Operations that would change the tree. procfs has its own answer for each
 * (EPERM, EACCES, ENOENT...); asking the source as the caller returns
 * exactly that answer instead of a guess. They never succeed on a procfs. */
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs/request/mutate.h"
#include "fs/caller/caller.h"
#include "fs/entries/name_class.h"
#include "fs/lib/settings.h"
#include "fs/request/node_life.h"
#include "fs/request/request.h"

enum change { CH_MKNOD, CH_MKDIR, CH_UNLINK, CH_RMDIR, CH_SYMLINK, CH_CREATE };

static int source_change(enum change what, const char *path, mode_t mode, dev_t rdev,
			 const char *link, int flags)
{
	int fd;

	switch (what) {
	case CH_MKNOD:
		return mknodat(pf.srcfd, path, mode, rdev) ? -errno : 0;
	case CH_MKDIR:
		return mkdirat(pf.srcfd, path, mode) ? -errno : 0;
	case CH_UNLINK:
		return unlinkat(pf.srcfd, path, 0) ? -errno : 0;
	case CH_RMDIR:
		return unlinkat(pf.srcfd, path, AT_REMOVEDIR) ? -errno : 0;
	case CH_SYMLINK:
		return symlinkat(link, pf.srcfd, path) ? -errno : 0;
	case CH_CREATE:
		fd = openat(pf.srcfd, path, (flags & O_ACCMODE) | O_CREAT | O_EXCL | O_CLOEXEC, mode);
		if (fd < 0)
			return -errno;
		close(fd);
		return 0;
	}
	return -EPERM;
}

/* Runs one change in parent/name as the caller. Should a source ever accept
 * one, the new entry is refused again (EPERM): procfast serves no made-up
 * entries. */
static void change_in(fuse_req_t req, fuse_ino_t parent, const char *name, enum change what,
		      mode_t mode, dev_t rdev, const char *link, int flags)
{
	char path[PATH_MAX];
	int r;

	REQUEST_BEGIN(rq, req, parent);
	if (pf.read_only)
		return request_fail(&rq, -EROFS);
	if ((r = child_path(rq.node, name, path, sizeof(path))) ||
	    (r = request_act(&rq, reader_ns_kinds(rq.node->cls, 0))))
		return request_fail(&rq, r);
	r = source_change(what, path, mode, rdev, link, flags);
	request_fail(&rq, r ? r : -EPERM);
}

void pf_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
	change_in(req, parent, name, CH_MKNOD, mode, rdev, NULL, 0);
}

void pf_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	change_in(req, parent, name, CH_MKDIR, mode, 0, NULL, 0);
}

void pf_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	change_in(req, parent, name, CH_UNLINK, 0, 0, NULL, 0);
}

void pf_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	change_in(req, parent, name, CH_RMDIR, 0, 0, NULL, 0);
}

void pf_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	change_in(req, parent, name, CH_SYMLINK, 0, 0, link, 0);
}

void pf_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
	       struct fuse_file_info *fi)
{
	change_in(req, parent, name, CH_CREATE, mode, 0, NULL, fi->flags);
}

void pf_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
	       const char *newname, unsigned int flags)
{
	char from[PATH_MAX], to[PATH_MAX];
	struct node *newdir;
	int r;

	REQUEST_BEGIN(rq, req, parent);
	if (!(newdir = request_node(newparent)))
		return request_fail(&rq, -ESTALE);
	if (pf.read_only)
		return request_fail(&rq, -EROFS);
	if ((r = child_path(rq.node, name, from, sizeof(from))) ||
	    (r = child_path(newdir, newname, to, sizeof(to))) ||
	    (r = request_act(&rq, reader_ns_kinds(rq.node->cls, 0))))
		return request_fail(&rq, r);
	r = renameat2(pf.srcfd, from, pf.srcfd, to, flags) ? -errno : -EPERM;
	request_fail(&rq, r);
}

void pf_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	char to[PATH_MAX];
	struct node *newdir;
	int r;

	REQUEST_BEGIN(rq, req, ino);
	if (!(newdir = request_node(newparent)))
		return request_fail(&rq, -ESTALE);
	if (pf.read_only)
		return request_fail(&rq, -EROFS);
	if ((r = child_path(newdir, newname, to, sizeof(to))) ||
	    (r = request_act(&rq, reader_ns_kinds(newdir->cls, 0))))
		return request_fail(&rq, r);
	r = linkat(pf.srcfd, rq.node->path, pf.srcfd, to, 0) ? -errno : -EPERM;
	request_fail(&rq, r);
}
