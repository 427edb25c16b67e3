/* Names and attributes: lookup, getattr, forget, setattr, access, statfs,
 * xattrs. Every source access runs under the caller's credentials, so the
 * source procfs itself decides what the caller may see. */
#include "fs/request/entry.h"

#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "cache/index/pid_view.h"
#include "cache/index/pidgen.h"
#include "cache/index/tgid_index.h"
#include "fs/caller/caller.h"
#include "fs/caller/source_op.h"
#include "fs/entries/cache_life.h"
#include "fs/entries/dedup.h"
#include "fs/entries/name_class.h"
#include "fs/lib/proc_names.h"
#include "fs/lib/settings.h"
#include "fs/request/entry_kinds.h"
#include "fs/request/file_size.h"
#include "fs/request/handle.h"
#include "fs/request/link.h"
#include "fs/request/node_life.h"
#include "fs/request/request.h"
#include "fs/request/root_names.h"



/* The group that a pid at the root belongs to, as its entries' owner: a
 * thread's entries below /proc/TID then live as long as its group's, like
 * those below its group's task/TID (the walk asks for TID each time, and a
 * gone thread's name fails). In a pid view, its own. */
static pid_t root_task_group(pid_t pid)
{
	return pid_view_active() || tgid_index_live_leader(pid) ? pid : pidgen_group(pid);
}

/* tid: the caller's, whose readlink names a link text's link (link.c). */
static int lookup_child(struct node *p, const struct name_class *cls, const char *name, pid_t tid,
			struct fuse_entry_param *e)
{
	char path[PATH_MAX];
	struct stat st;
	enum node_kind kind = NODE_MIRROR;
	struct node_owner owner = p->owner;
	enum name_life life;
	struct node *n;
	int r;

	if ((r = node_alive(p)))
		return node_lookup_gone(p, r);
	if ((r = child_path(p, name, path, sizeof(path))))
		return r;
	if ((r = source_stat(path, &st, AT_SYMLINK_NOFOLLOW)) == 0) {
		if (cls->flags & NC_TASK) {
			owner.pid = name_pid(name);
			owner.daemon_pid = pid_view_to_daemon(owner.pid);
			if (p->kind == NODE_ROOT)
				owner.tgid = root_task_group(owner.pid);
			if ((r = pidgen_get(owner.pid, &owner.gen)))
				return r;
		}
		if (cls->flags & NC_CALLER_LINK)
			kind = NODE_CALLER_LINK;
		else if (S_ISDIR(st.st_mode) && dedup_child(p, cls, &owner.tgid))
			kind = NODE_DEDUP_LINK;
	} else {
		if (r != -ENOENT || !(cls->flags & NC_LINK_TARGET))
			return r;
		if ((r = link_target_find(p, tid, name, path, sizeof(path), &st)))
			return r;
		kind = NODE_LINK_TARGET;
	}
	if (kind == NODE_DEDUP_LINK)
		dedup_link_attr(cls, name, owner.tgid, &st);
	n = node_get_or_insert(p, name, path, &st,
			       &(struct node_identity){ kind, st.st_mode, owner.gen }, &owner, cls,
			       p->kind == NODE_ROOT ? root_names_fixed_id(name) : 0);
	if (!n)
		return -ENOMEM;
	life = cache_life_of(p, cls, name);
	memset(e, 0, sizeof(*e));
	e->ino = node_ino(n);
	e->generation = n->serial;
	e->attr = st;
	e->attr_timeout = cache_life_attr_timeout(n);
	e->entry_timeout = cache_life_entry_timeout(p, life);
	/* Whether a thread shares its leader's files is asked again soon: a
	 * thread that unshares gets its own directory within a second. (A
	 * thread id's task/ is a link, and a leader's a directory, for good.) */
	if ((cls->flags & (NC_THREAD_FILES | NC_THREAD_NET)) && e->entry_timeout > DEDUP_RECHECK_S)
		e->entry_timeout = DEDUP_RECHECK_S;
	return 0;
}

struct node *entry_resolve_fixed(uint64_t id)
{
	const char *name = root_names_fixed_name(id);
	const struct name_class *cls;
	struct stat st;

	if (!name || fstatat(pf.srcfd, name, &st, AT_SYMLINK_NOFOLLOW))
		return NULL;
	cls = name_classify(node_root()->cls, name);
	return node_get_or_insert(node_root(), name, name, &st,
				  &(struct node_identity){
					  cls->flags & NC_CALLER_LINK ? NODE_CALLER_LINK : NODE_MIRROR,
					  st.st_mode, 0 },
				  &(struct node_owner){ 0 }, cls, id);
}

const struct name_class *entry_complete_record(const struct node *parent, const char *name,
					       struct node_owner *owner)
{
	if (owner->pid)
		owner->daemon_pid = pid_view_to_daemon(owner->pid);
	return name_classify(parent->cls, name);
}

static int lookup_as(struct node *p, const struct name_class *cls, const char *name, pid_t tid,
		     struct fuse_entry_param *e)
{
	int r = node_walk_error(p, lookup_child(p, cls, name, tid, e));

	if (!r)
		file_size_before_reply(node_from_ino(e->ino), 0);
	return r;
}

int entry_lookup(struct node *p, const struct name_class *cls, const char *name,
		 struct fuse_entry_param *e)
{
	return lookup_as(p, cls, name, 0, e);
}

void pf_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	const struct name_class *cls;
	struct fuse_entry_param e;
	enum name_life life;
	int r;

	REQUEST_BEGIN(rq, req, parent);
	if (rq.node->type != S_IFDIR)
		return request_fail(&rq, -ENOTDIR);
	cls = name_classify(rq.node->cls, name);
	if ((r = request_act(&rq, reader_ns_kinds(cls, 0))))
		return request_fail(&rq, r);
	r = lookup_as(rq.node, cls, name, rq.caller.tid, &e);
	request_act_end(&rq);
	if (r == -ENOENT &&
	    ((life = cache_life_of(rq.node, cls, name)) == LIFE_FIXED || life == LIFE_TASK)) {
		/* A fixed name that is absent stays absent (PID/ctty, say). */
		memset(&e, 0, sizeof(e));
		e.entry_timeout = cache_life_entry_timeout(rq.node, life);
		fuse_reply_entry(req, &e);
		return;
	}
	if (r)
		return request_fail(&rq, r);
	if (fuse_reply_entry(req, &e) == -ENOENT) /* the caller was interrupted */
		node_forget(node_from_ino(e.ino), 1);
}

/* Forgets count no request: a forget is never answered, nor waits. */
void pf_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	struct node *n = request_node(ino);

	if (n) /* else a node of an earlier server (request.h) */
		node_forget(n, nlookup);
	fuse_reply_none(req);
}

void pf_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	for (size_t i = 0; i < count; i++) {
		struct node *n = request_node(forgets[i].ino);

		if (n)
			node_forget(n, forgets[i].nlookup);
	}
	fuse_reply_none(req);
}

/* A node's attributes: fstat() on an open file asks about that file, which
 * outlives its name (a zombie's fdinfo/N, an exited process's status); else
 * the source's entry, as the caller (acting). */
static int attributes(struct node *n, int fd, struct stat *st)
{
	if (fd < 0)
		return entry_ops_of(n)->stat(n, st);
	if (fstat(fd, st))
		return -errno;
	if (n->kind == NODE_LINK_TARGET)
		link_target_fixup(st);
	return 0;
}

static void reply_attributes(struct request *rq, int fd)
{
	struct stat st;
	int r = attributes(rq->node, fd, &st);

	if (r)
		return request_fail(rq, r);
	request_act_end(rq);
	file_size_before_reply(rq->node, fd >= 0);
	fuse_reply_attr(rq->req, &st, cache_life_attr_timeout(rq->node));
}

void pf_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	int fd, r;

	REQUEST_BEGIN(rq, req, ino);
	/* the root has no handle (dir.c); a helper's has no fd (file.c) */
	fd = !fi || ino == FUSE_ROOT_ID ? -1 : handle_fd(fi->fh);
	if (fd < 0 && (r = request_act(&rq, reader_ns_kinds(rq.node->cls, 0))))
		return request_fail(&rq, r);
	reply_attributes(&rq, fd);
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
		int fd = fi ? handle_fd(fi->fh) : -1;
		int r = fd >= 0 ? ftruncate(fd, attr->st_size) : -1;

		if (fd < 0) {
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
	int r;

	REQUEST_BEGIN(rq, req, ino);
	if (pf.read_only)
		return request_fail(&rq, -EROFS);
	if ((r = request_act(&rq, reader_ns_kinds(rq.node->cls, 0))) ||
	    (r = apply_setattr(rq.node, attr, to_set, fi)))
		return request_fail(&rq, r);
	reply_attributes(&rq, -1);
}

void pf_access(fuse_req_t req, fuse_ino_t ino, int mask)
{
	int flags, r;

	REQUEST_BEGIN(rq, req, ino);
	flags = AT_EACCESS | (rq.node->kind == NODE_LINK_TARGET ? 0 : AT_SYMLINK_NOFOLLOW);
	if ((r = request_act(&rq, reader_ns_kinds(rq.node->cls, 0))))
		return request_fail(&rq, r);
	r = source_access(rq.node->path, mask, flags);
	request_fail(&rq, node_walk_error(rq.node, r ? r : node_alive(rq.node)));
}

void pf_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct statvfs sv;

	REQUEST_BEGIN(rq, req, ino);
	if (fstatvfs(pf.srcfd, &sv))
		return request_fail(&rq, -errno);
	fuse_reply_statfs(req, &sv);
}

void pf_readlink(fuse_req_t req, fuse_ino_t ino)
{
	char buf[PATH_MAX];
	int (*text)(struct request *rq, char *buf, size_t len);
	int r;

	REQUEST_BEGIN(rq, req, ino);
	text = entry_ops_of(rq.node)->readlink;
	if ((r = text ? text(&rq, buf, sizeof(buf)) : -EINVAL))
		return request_fail(&rq, node_walk_error(rq.node, r));
	fuse_reply_readlink(req, buf);
}
