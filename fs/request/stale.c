/* Requests that name a node of an earlier daemon.
 *
 * After a restart on the same connection (fs/supervisor/supervisor.c) the kernel still
 * holds node ids, and file handles, that the daemon before gave out. Node ids
 * are never reused (cache/nodes/node.h), so such an id is unknown here: the request
 * is answered ESTALE, which makes the kernel look the path up again (open,
 * stat, readlink and friends retry by themselves), and its file handle is
 * never touched. Each operation below checks its ids, then goes on.
 */
#include <errno.h>

#include "fs/request/stale.h"
#include "cache/nodes/node.h"
#include "fs/request/ops.h"
#include "fs/request/xattr.h"

static int stale(fuse_req_t req, fuse_ino_t ino)
{
	if (node_from_ino(ino))
		return 0;
	fuse_reply_err(req, ESTALE);
	return 1;
}

static void g_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	if (!stale(req, parent))
		pf_lookup(req, parent, name);
}

static void g_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	if (node_from_ino(ino))
		pf_forget(req, ino, nlookup);
	else
		fuse_reply_none(req);
}

static void g_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (!stale(req, ino))
		pf_getattr(req, ino, fi);
}

static void g_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		      struct fuse_file_info *fi)
{
	if (!stale(req, ino))
		pf_setattr(req, ino, attr, to_set, fi);
}

static void g_access(fuse_req_t req, fuse_ino_t ino, int mask)
{
	if (!stale(req, ino))
		pf_access(req, ino, mask);
}

static void g_statfs(fuse_req_t req, fuse_ino_t ino)
{
	if (!stale(req, ino))
		pf_statfs(req, ino);
}

static void g_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	if (!stale(req, ino))
		xattr_get(req, ino, name, size);
}

static void g_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	if (!stale(req, ino))
		xattr_list(req, ino, size);
}

static void g_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
		       size_t size, int flags)
{
	if (!stale(req, ino))
		xattr_set(req, ino, name, value, size, flags);
}

static void g_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	if (!stale(req, ino))
		xattr_remove(req, ino, name);
}

static void g_readlink(fuse_req_t req, fuse_ino_t ino)
{
	if (!stale(req, ino))
		pf_readlink(req, ino);
}

static void g_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (!stale(req, ino))
		pf_opendir(req, ino, fi);
}

static void g_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		      struct fuse_file_info *fi)
{
	if (!stale(req, ino))
		pf_readdir(req, ino, size, off, fi);
}

static void g_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			  struct fuse_file_info *fi)
{
	if (!stale(req, ino))
		pf_readdirplus(req, ino, size, off, fi);
}

typedef void handle_op(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);

/* A handle of an earlier daemon has nothing to release here: its fh is
 * never touched. */
static void release_known(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
			  handle_op *release)
{
	if (node_from_ino(ino))
		release(req, ino, fi);
	else
		fuse_reply_err(req, 0);
}

static void g_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	release_known(req, ino, fi, pf_releasedir);
}

static void g_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (!stale(req, ino))
		pf_open(req, ino, fi);
}

static void g_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		   struct fuse_file_info *fi)
{
	if (!stale(req, ino))
		pf_read(req, ino, size, off, fi);
}

static void g_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	if (!stale(req, ino))
		pf_write(req, ino, buf, size, off, fi);
}

static void g_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	release_known(req, ino, fi, pf_release);
}

static void g_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
	if (!stale(req, parent))
		pf_mknod(req, parent, name, mode, rdev);
}

static void g_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	if (!stale(req, parent))
		pf_mkdir(req, parent, name, mode);
}

static void g_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	if (!stale(req, parent))
		pf_unlink(req, parent, name);
}

static void g_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	if (!stale(req, parent))
		pf_rmdir(req, parent, name);
}

static void g_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	if (!stale(req, parent))
		pf_symlink(req, link, parent, name);
}

static void g_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		     struct fuse_file_info *fi)
{
	if (!stale(req, parent))
		pf_create(req, parent, name, mode, fi);
}

static void g_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
		     const char *newname, unsigned int flags)
{
	if (!node_from_ino(newparent))
		fuse_reply_err(req, ESTALE);
	else if (!stale(req, parent))
		pf_rename(req, parent, name, newparent, newname, flags);
}

static void g_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	if (!node_from_ino(newparent))
		fuse_reply_err(req, ESTALE);
	else if (!stale(req, ino))
		pf_link(req, ino, newparent, newname);
}

void stale_guard_ops(struct fuse_lowlevel_ops *ops)
{
	ops->lookup = g_lookup;
	ops->forget = g_forget;
	ops->forget_multi = pf_forget_multi; /* skips unknown ids itself */
	ops->getattr = g_getattr;
	ops->setattr = g_setattr;
	ops->access = g_access;
	ops->statfs = g_statfs;
	ops->getxattr = g_getxattr;
	ops->listxattr = g_listxattr;
	ops->setxattr = g_setxattr;
	ops->removexattr = g_removexattr;
	ops->readlink = g_readlink;
	ops->opendir = g_opendir;
	ops->readdir = g_readdir;
	ops->readdirplus = g_readdirplus;
	ops->releasedir = g_releasedir;
	ops->open = g_open;
	ops->read = g_read;
	ops->write = g_write;
	ops->release = g_release;
	ops->mknod = g_mknod;
	ops->mkdir = g_mkdir;
	ops->unlink = g_unlink;
	ops->rmdir = g_rmdir;
	ops->symlink = g_symlink;
	ops->create = g_create;
	ops->rename = g_rename;
	ops->link = g_link;
}
