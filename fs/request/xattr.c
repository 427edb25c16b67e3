/* Extended attributes: getxattr, listxattr, setxattr, removexattr.
 *
 * procfs has no xattr handlers of its own: on its files and directories
 * getxattr, setxattr and removexattr say EOPNOTSUPP and listxattr lists
 * nothing, where the VFS does not answer first (user.* of a link: ENODATA,
 * EPERM to a change; it answers so on this side too, for the same file
 * types). What carries attributes is what an fd's magic link leads to: a
 * socket's sockfs gives "system.sockprotoname", which lsof reads through
 * /proc/PID/fd/N to name the protocol of a socket absent from /proc/net.
 *
 * Over FUSE that link is a plain symlink. An absolute text (a file) is
 * resolved by the kernel in the caller's own files and never comes here; a
 * relative one ("socket:[N]", "pipe:[N]") is resolved inside the fd
 * directory, to the hidden link target (link.c): its calls follow the fd
 * link, as the kernel follows procfs's magic link. Every other node's calls
 * are made on the entry itself, without following.
 *
 * Each call is made as the caller (request_act), so the source decides:
 * following an fd link needs ptrace access to its process, as on /proc. The
 * xattr calls take a path, not a directory fd, so the source is named by
 * its path (pf.source).
 */
#include "fs/request/xattr.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "cache/nodes/node.h"
#include "fs/caller/caller.h"
#include "fs/caller/reader_ns.h"
#include "fs/caller/source_op.h"
#include "fs/entries/name_class.h"
#include "fs/lib/cleanup.h"
#include "fs/lib/settings.h"
#include "fs/request/node_life.h"
#include "fs/request/request.h"

enum xattr_op { XA_GET, XA_LIST, XA_SET, XA_REMOVE };

struct xattr_call {
	enum xattr_op op;
	const char *name;  /* all but XA_LIST */
	const char *value; /* XA_SET */
	char *buf;         /* XA_GET, XA_LIST: size bytes; NULL for a size probe */
	size_t size;
	int flags;         /* XA_SET: XATTR_CREATE, XATTR_REPLACE */
};

/* Whether a link target is still the object its lookup found: its fd link
 * still has that text ("socket:[N]" names the inode). 0; -ENOENT when the
 * fd was closed or now names another object; readlink's error otherwise
 * (EACCES, as the walk through /proc would say). */
static int target_still(const struct node *n)
{
	char text[PATH_MAX];
	ssize_t len;

	if (n->kind != NODE_LINK_TARGET)
		return 0;
	len = readlinkat(pf.srcfd, n->path, text, sizeof(text) - 1);
	if (len < 0)
		return -errno;
	text[len] = '\0';
	return strcmp(text, n->name) ? -ENOENT : 0;
}

/* On the daemon's own processes a worker's walk would pass where the
 * caller's fails (source_op.h): the walk to the entry, and through an fd
 * link, is made first as the caller, by a helper. The attributes
 * themselves are procfs's or the object's, whoever asks. */
static int walk_allowed(const struct node *n)
{
	struct stat st;

	if (!source_needs_helper(n->path))
		return 0;
	return source_stat(n->path, &st, n->kind == NODE_LINK_TARGET ? 0 : AT_SYMLINK_NOFOLLOW);
}

static ssize_t call(const char *path, int follow, const struct xattr_call *x)
{
	switch (x->op) {
	case XA_GET:
		return follow ? getxattr(path, x->name, x->buf, x->size)
			      : lgetxattr(path, x->name, x->buf, x->size);
	case XA_LIST:
		return follow ? listxattr(path, x->buf, x->size) : llistxattr(path, x->buf, x->size);
	case XA_SET:
		return follow ? setxattr(path, x->name, x->value, x->size, x->flags)
			      : lsetxattr(path, x->name, x->value, x->size, x->flags);
	case XA_REMOVE:
		return follow ? removexattr(path, x->name) : lremovexattr(path, x->name);
	}
	errno = EINVAL;
	return -1;
}

/* Makes x on the request's source entry as its caller: the call's result (a
 * length for XA_GET and XA_LIST, 0 for the others), or -errno. A link
 * target is checked before the call (a change must not reach another
 * object) and after it (nor an answer come from one). */
static ssize_t forward(struct request *rq, const struct xattr_call *x)
{
	struct node *n = rq->node;
	char path[PATH_MAX];
	ssize_t len = 0;
	int r = snprintf(path, sizeof(path), "%s/%s", pf.source, n->path);

	if (r < 0 || (size_t)r >= sizeof(path))
		return -ENAMETOOLONG;
	if ((r = request_act(rq, reader_ns_kinds(n->cls, 0))))
		return r;
	if (!(r = target_still(n)) && !(r = walk_allowed(n))) {
		len = call(path, n->kind == NODE_LINK_TARGET, x);
		r = len < 0 ? -errno : target_still(n);
	}
	/* a process that is gone explains the failure best (ESTALE first, so
	 * that a walk by path asks again, as for access and open) */
	r = node_walk_error(n, node_error(n, r));
	request_act_end(rq);
	return r ? r : len;
}

/* getxattr and listxattr: the size probe (size 0) is answered with the
 * length the data needs, a buffer too small with the source's ERANGE. */
static void read_call(fuse_req_t req, fuse_ino_t ino, enum xattr_op op, const char *name,
		      size_t size)
{
	__do_free char *buf = size ? malloc(size) : NULL;
	struct xattr_call x = { .op = op, .name = name, .buf = buf, .size = size };
	ssize_t len;

	REQUEST_BEGIN(rq, req, ino);
	if (size && !buf)
		return request_fail(&rq, -ENOMEM);
	len = forward(&rq, &x);
	if (len < 0)
		request_fail(&rq, (int)len);
	else if (!size)
		fuse_reply_xattr(req, (size_t)len);
	else
		fuse_reply_buf(req, buf, (size_t)len);
}

void xattr_get(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	read_call(req, ino, XA_GET, name, size);
}

void xattr_list(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	read_call(req, ino, XA_LIST, NULL, size);
}

/* setxattr and removexattr: procfs refuses both in its own words
 * (EOPNOTSUPP, or the VFS's EPERM); they are still asked of the source. */
static void change_call(fuse_req_t req, fuse_ino_t ino, const struct xattr_call *x)
{
	REQUEST_BEGIN(rq, req, ino);
	if (pf.read_only)
		return request_fail(&rq, -EROFS);
	request_fail(&rq, (int)forward(&rq, x));
}

void xattr_set(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value, size_t size,
	       int flags)
{
	change_call(req, ino, &(struct xattr_call){ .op = XA_SET, .name = name, .value = value,
						     .size = size, .flags = flags });
}

void xattr_remove(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	change_call(req, ino, &(struct xattr_call){ .op = XA_REMOVE, .name = name });
}
