/* Names and attributes: lookup, getattr, forget, setattr, access, statfs,
 * xattrs. Every source access runs under the caller's credentials, so the
 * source procfs itself decides what the caller may see. */
#include "fs/ops/entry.h"

#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "cache/pidgen.h"
#include "cache/tgid_index.h"
#include "fs/ops/caller.h"
#include "fs/ops/dedup.h"
#include "fs/ops/dir.h"
#include "fs/ops/invalidate.h"
#include "fs/ops/link.h"
#include "fs/ops/names.h"
#include "fs/ops/ops.h"
#include "fs/ops/settings.h"

int child_path(const struct node *parent, const char *name, char *buf, size_t len)
{
	int n = parent->kind == NODE_ROOT ? snprintf(buf, len, "%s", name)
					  : snprintf(buf, len, "%s/%s", parent->path, name);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* ESRCH, as procfs answers inside the directory of a process that is gone
 * (or whose pid now names another process); ENOENT inside a thread's. */
int node_alive(const struct node *n)
{
	int r;

	if (!n->owner.pid || !(r = pidgen_check(n->owner.pid, n->owner.gen)))
		return 0;
	if (r != -ENOENT)
		return r; /* cannot tell (EMFILE): say why */
	return strstr(n->path, "/task/") ? -ENOENT : -ESRCH;
}

/* The kernel caches a process's name at the root until the exit event drops
 * it (invalidate.c), and the pid may name a new process before that event is
 * handled. procfs checks its names on every walk (pid_revalidate), so there a
 * walk by path reaches the new process, or ENOENT. Here, the first request to
 * find the process gone drops the name itself and answers ESTALE: the VFS
 * then walks the path once more, asking us for every name on it. Requests
 * after it (a walk from a held descriptor of the gone process comes back to
 * the same nodes) get procfs's answer. */
int node_walk_error(struct node *n, int r)
{
	struct node *dir;

	/* n's own process was just asked about (pidgen memo): a name absent
	 * from a live process costs nothing more. */
	if ((r != -ESRCH && r != -ENOENT) || !node_gone(n))
		return r;
	dir = node_process_dir(n);
	if (!dir || atomic_load(&dir->name_dropped) || (dir != n && !node_gone(dir)))
		return r;
	return invalidate_process_name(dir) ? r : -ESTALE;
}

/* What the kernel may cache about a process's entries: only while it is a
 * listed leader that has not exited, since the exit event drops the cache
 * (invalidate.c) and nothing announces its reaping. The pidfd check closes
 * the window before the exit event is handled. */
static int process_cacheable(pid_t tgid)
{
	/* With hidepid, what one caller may see another may not, and the
	 * kernel's caches are shared by all callers. */
	return !pf.hide_level && tgid_index_live_leader(tgid) && !pidgen_exited(tgid);
}

/* procfs keeps answering stat on an inode whose entry or process is gone
 * (fstat on an open file, say): the last attributes, owned by root once the
 * process is gone. Its fd/ and fdinfo/ count open files and fail instead. */
static int gone_stat(const struct node *n, struct stat *st, int process_gone)
{
	if (process_gone && n->type == S_IFDIR && (!strcmp(n->name, "fd") || !strcmp(n->name, "fdinfo")))
		return -ENOENT;
	memset(st, 0, sizeof(*st));
	node_recall(n, st);
	if (process_gone)
		st->st_uid = st->st_gid = 0;
	st->st_blksize = 1024;
	return 0;
}

int node_stat(struct node *n, struct stat *st)
{
	int r;

	if (n->kind == NODE_LINK_TARGET)
		return link_target_stat(n, st);
	if (fstatat(pf.srcfd, n->path, st, AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH)) {
		r = -errno;
	} else {
		if (n->kind == NODE_DEDUP_LINK)
			dedup_link_attr(n->name, n->owner.tgid, st);
		/* a name that changed nature is another entry now */
		r = (st->st_mode & S_IFMT) != n->type ? -ENOENT : 0;
	}
	if (node_gone(n))
		return gone_stat(n, st, 1);
	if (r == -ENOENT && n->kind == NODE_MIRROR && n->type != S_IFLNK) /* can be held open */
		return gone_stat(n, st, 0);
	if (!r)
		node_remember(n, st);
	return r;
}

/* Does this child name a task: a pid at the root or a tid in PID/task? */
static pid_t task_of_child(const struct node *parent, const char *name)
{
	if (parent->kind == NODE_ROOT ||
	    (parent->owner.pid && !strcmp(parent->name, "task") && strchr(parent->path, '/') ==
	     strrchr(parent->path, '/')))
		return name_pid(name);
	return 0;
}

static int is_caller_link(const struct node *parent, const char *name)
{
	return parent->kind == NODE_ROOT && name_is_caller_link(name);
}

/* What the kernel may cache about a name and its attributes.
 *
 * Names fixed for the life of their directory (a process's "status", "sys/"
 * entries) are cached, present or absent. Names that come and go while
 * their directory lives are asked every time (tids, fdinfo/N, mappings),
 * except:
 *  - a pid at the root, cached while its leader lives: its exit event drops
 *    it (invalidate.c);
 *  - fd/N, a link whose text is always read afresh: the name may be cached
 *    but not its attributes (lstat gives the fd's current open mode);
 *  - a link target whose text names one object ("socket:[N]"): that object's
 *    attributes do not change. "anon_inode:[eventfd]" names many objects.
 * Nothing is cached inside a process that exited (a zombie, or a leader
 * whose threads live on): no event will come for its reaping. A cached name
 * of a process that exited still fails at once: every operation checks the
 * process generation. */
enum cache_class {
	CACHE_ALL,          /* the name, present or absent, and its attributes */
	CACHE_PRESENT,      /* the name while present, and its attributes */
	CACHE_PRESENT_NAME, /* the name while present; attributes asked every time */
	CACHE_NONE,
};

static enum cache_class cache_class(const struct node *parent, const char *name, enum node_kind kind)
{
	if (kind == NODE_LINK_TARGET || name_is_link_text(name))
		return name_is_one_object(name) ? CACHE_PRESENT : CACHE_NONE;
	if (parent->kind == NODE_ROOT && name[0] >= '0' && name[0] <= '9')
		return process_cacheable(name_pid(name)) ? CACHE_PRESENT : CACHE_NONE;
	if (parent->owner.tgid && !process_cacheable(parent->owner.tgid))
		return CACHE_NONE;
	if (!parent->owner.pid)
		return CACHE_ALL;
	if (!strcmp(parent->name, "fd"))
		return CACHE_PRESENT_NAME;
	if (!strcmp(parent->name, "fdinfo") || !strcmp(parent->name, "map_files") ||
	    !strcmp(parent->name, "task"))
		return CACHE_NONE;
	return CACHE_ALL;
}

/* Lookups of one name on several threads may set a node's class at once
 * (from the process state each saw): it is stored and read whole (atomic),
 * and a lookup's reply uses the class that lookup decided. */
static double attr_timeout_for_class(const struct node *n, enum cache_class class)
{
	if (class == CACHE_NONE || class == CACHE_PRESENT_NAME ||
	    (n->owner.tgid && !process_cacheable(n->owner.tgid)))
		return 0;
	return pf.attr_timeout;
}

static double attr_timeout_for(const struct node *n)
{
	return attr_timeout_for_class(n, __atomic_load_n(&n->cache, __ATOMIC_RELAXED));
}

static double entry_timeout_for(enum cache_class class)
{
	return class == CACHE_NONE ? 0 : pf.entry_timeout;
}

#define DEDUP_RECHECK_S 1.0

static int dedup_candidate(const struct node *p, const char *name)
{
	return !strcmp(name, "fd") || !strcmp(name, "fdinfo") || !strcmp(name, "net") ||
	       (!strcmp(name, "task") && p->owner.pid && !strchr(p->path, '/'));
}

static int lookup_child(struct node *p, const char *name, struct fuse_entry_param *e)
{
	char path[PATH_MAX];
	struct stat st;
	enum node_kind kind = NODE_MIRROR;
	struct node_owner owner = p->owner;
	enum cache_class class;
	struct node *n;
	int r;

	if ((r = node_alive(p)) || (r = child_path(p, name, path, sizeof(path))))
		return r;
	if (fstatat(pf.srcfd, path, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		pid_t task = task_of_child(p, name);

		if (task) {
			owner.pid = task;
			if (p->kind == NODE_ROOT)
				owner.tgid = task;
			if ((r = pidgen_get(task, &owner.gen)))
				return r;
		}
		if (is_caller_link(p, name))
			kind = NODE_CALLER_LINK;
		else if (S_ISDIR(st.st_mode) && dedup_child(p, name, &owner.tgid))
			kind = NODE_DEDUP_LINK;
	} else {
		r = -errno;
		if (r != -ENOENT || !name_is_link_text(name))
			return r;
		if ((r = link_target_find(p, name, path, sizeof(path), &st)))
			return r;
		kind = NODE_LINK_TARGET;
	}
	if (kind == NODE_DEDUP_LINK)
		dedup_link_attr(name, owner.tgid, &st);
	n = node_get_or_insert(p, name, path, &st,
			       &(struct node_identity){ kind, st.st_mode, owner.gen }, &owner);
	if (!n)
		return -ENOMEM;
	class = cache_class(p, name, kind);
	__atomic_store_n(&n->cache, (unsigned char)class, __ATOMIC_RELAXED);
	memset(e, 0, sizeof(*e));
	e->ino = node_ino(n);
	e->generation = n->serial;
	e->attr = st;
	e->attr_timeout = attr_timeout_for_class(n, class);
	e->entry_timeout = entry_timeout_for(class);
	/* Whether a thread shares its leader's files is asked again soon: a
	 * thread that unshares gets its own directory within a second. */
	if ((kind == NODE_DEDUP_LINK || dedup_candidate(p, name)) && e->entry_timeout > DEDUP_RECHECK_S)
		e->entry_timeout = DEDUP_RECHECK_S;
	return 0;
}

void pf_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct node *p = node_from_ino(parent);
	struct fuse_entry_param e;
	struct caller c;
	int r;

	if (p->type != S_IFDIR)
		return reply_err(req, -ENOTDIR);
	caller_load(req, &c);
	if ((r = caller_enter(&c)))
		return reply_err(req, r);
	r = node_walk_error(p, lookup_child(p, name, &e));
	caller_leave();
	if (r == -ENOENT && cache_class(p, name, NODE_MIRROR) == CACHE_ALL) {
		/* A fixed name that is absent stays absent (PID/ctty, say). */
		memset(&e, 0, sizeof(e));
		e.entry_timeout = pf.entry_timeout;
		fuse_reply_entry(req, &e);
		return;
	}
	if (r)
		return reply_err(req, r);
	if (fuse_reply_entry(req, &e) == -ENOENT) /* the caller was interrupted */
		node_forget(node_from_ino(e.ino), 1);
}

void pf_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	node_forget(node_from_ino(ino), nlookup);
	fuse_reply_none(req);
}

void pf_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	for (size_t i = 0; i < count; i++) {
		struct node *n = node_from_ino(forgets[i].ino);

		if (n) /* else a node of an earlier daemon (stale.c) */
			node_forget(n, forgets[i].nlookup);
	}
	fuse_reply_none(req);
}

static int reply_stat(fuse_req_t req, struct node *n)
{
	struct stat st;
	int r = node_stat(n, &st);

	caller_leave();
	if (r)
		return fuse_reply_err(req, -r);
	return fuse_reply_attr(req, &st, attr_timeout_for(n));
}

/* fstat() on an open file asks about that file, which outlives its name
 * (a zombie's fdinfo/N, an exited process's status). */
static void reply_handle_stat(fuse_req_t req, struct node *n, struct fuse_file_info *fi)
{
	struct stat st;
	int fd = n->type == S_IFDIR ? dir_handle_fd(fi) : (int)fi->fh;

	if (fstat(fd, &st))
		return reply_err(req, -errno);
	if (n->kind == NODE_LINK_TARGET)
		link_target_fixup(&st);
	fuse_reply_attr(req, &st, attr_timeout_for(n));
}

void pf_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct caller c;
	int r;

	if (fi && ino != FUSE_ROOT_ID) /* the root has no handle (dir.c) */
		return reply_handle_stat(req, node_from_ino(ino), fi);
	caller_load(req, &c);
	if ((r = caller_enter(&c)))
		return reply_err(req, r);
	reply_stat(req, node_from_ino(ino));
}

static struct timespec time_arg(int now, struct timespec given)
{
	struct timespec ts = { .tv_nsec = UTIME_NOW };

	return now ? ts : given;
}

/* procfs refuses mode changes (EPERM) and accepts size and time changes
 * without effect; asking the source keeps every answer its own. */
static int apply_setattr(const struct node *n, struct stat *attr, int to_set,
			 struct fuse_file_info *fi)
{
	if (n->kind != NODE_MIRROR && n->kind != NODE_ROOT)
		return -EPERM;
	if ((to_set & FUSE_SET_ATTR_MODE) && fchmodat(pf.srcfd, n->path, attr->st_mode, 0))
		return -errno;
	if ((to_set & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID)) &&
	    fchownat(pf.srcfd, n->path, to_set & FUSE_SET_ATTR_UID ? attr->st_uid : (uid_t)-1,
		     to_set & FUSE_SET_ATTR_GID ? attr->st_gid : (gid_t)-1, AT_SYMLINK_NOFOLLOW))
		return -errno;
	if (to_set & FUSE_SET_ATTR_SIZE) {
		int r = fi ? ftruncate((int)fi->fh, attr->st_size) : -1;

		if (!fi) {
			char abs[PATH_MAX];

			snprintf(abs, sizeof(abs), "%s/%s", pf.source, n->path);
			r = truncate(abs, attr->st_size);
		}
		if (r)
			return -errno;
	}
	if (to_set & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME)) {
		struct timespec ts[2] = { { .tv_nsec = UTIME_OMIT }, { .tv_nsec = UTIME_OMIT } };

		if (to_set & FUSE_SET_ATTR_ATIME)
			ts[0] = time_arg(to_set & FUSE_SET_ATTR_ATIME_NOW, attr->st_atim);
		if (to_set & FUSE_SET_ATTR_MTIME)
			ts[1] = time_arg(to_set & FUSE_SET_ATTR_MTIME_NOW, attr->st_mtim);
		if (utimensat(pf.srcfd, n->path, ts, AT_SYMLINK_NOFOLLOW))
			return -errno;
	}
	return node_alive(n);
}

void pf_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		       struct fuse_file_info *fi)
{
	struct node *n = node_from_ino(ino);
	struct caller c;
	int r;

	if (pf.read_only)
		return reply_err(req, -EROFS);
	caller_load(req, &c);
	if ((r = caller_enter(&c)))
		return reply_err(req, r);
	r = apply_setattr(n, attr, to_set, fi);
	if (r) {
		caller_leave();
		return reply_err(req, r);
	}
	reply_stat(req, n);
}

void pf_access(fuse_req_t req, fuse_ino_t ino, int mask)
{
	struct node *n = node_from_ino(ino);
	int flags = AT_EACCESS | (n->kind == NODE_LINK_TARGET ? 0 : AT_SYMLINK_NOFOLLOW);
	struct caller c;
	int r;

	caller_load(req, &c);
	if ((r = caller_enter(&c)))
		return reply_err(req, r);
	r = node_walk_error(n, faccessat(pf.srcfd, n->path, mask, flags) ? -errno : node_alive(n));
	caller_leave();
	reply_err(req, r);
}

void pf_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct statvfs sv;

	(void)ino;
	if (fstatvfs(pf.srcfd, &sv))
		return reply_err(req, -errno);
	fuse_reply_statfs(req, &sv);
}

/* getxattr and listxattr share one shape: call, then answer the size
 * probe (size 0) or the data. */
static void reply_xattr_result(fuse_req_t req, ssize_t len, int err, const char *buf,
			       size_t size)
{
	if (len < 0)
		return reply_err(req, -err);
	if (size == 0)
		fuse_reply_xattr(req, (size_t)len);
	else
		fuse_reply_buf(req, buf, (size_t)len);
}

static int xattr_path(fuse_req_t req, fuse_ino_t ino, size_t size, char *abs, char **buf)
{
	struct node *n = node_from_ino(ino);
	struct caller c;
	int r;

	snprintf(abs, PATH_MAX, "%s/%s", pf.source, n->path);
	*buf = size ? malloc(size) : NULL;
	if (size && !*buf)
		return -ENOMEM;
	caller_load(req, &c);
	if ((r = caller_enter(&c)) || (r = node_alive(n))) {
		caller_leave();
		free(*buf);
		*buf = NULL;
	}
	return r;
}

void pf_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	char abs[PATH_MAX], *buf;
	ssize_t len;
	int r = xattr_path(req, ino, size, abs, &buf);

	if (r)
		return reply_err(req, r);
	len = lgetxattr(abs, name, buf, size);
	r = errno;
	caller_leave();
	reply_xattr_result(req, len, r, buf, size);
	free(buf);
}

/* setxattr and removexattr: procfs refuses both, in its own words. */
static void change_xattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
			 size_t size, int flags, int remove)
{
	char abs[PATH_MAX], *unused;
	int r;

	if (pf.read_only)
		return reply_err(req, -EROFS);
	if ((r = xattr_path(req, ino, 0, abs, &unused)))
		return reply_err(req, r);
	r = (remove ? lremovexattr(abs, name) : lsetxattr(abs, name, value, size, flags)) ? -errno : 0;
	caller_leave();
	reply_err(req, r);
}

void pf_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
		 size_t size, int flags)
{
	change_xattr(req, ino, name, value, size, flags, 0);
}

void pf_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	change_xattr(req, ino, name, NULL, 0, 0, 1);
}

void pf_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	char abs[PATH_MAX], *buf;
	ssize_t len;
	int r = xattr_path(req, ino, size, abs, &buf);

	if (r)
		return reply_err(req, r);
	len = llistxattr(abs, buf, size);
	r = errno;
	caller_leave();
	reply_xattr_result(req, len, r, buf, size);
	free(buf);
}

