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
#include "fs/entries/dedup.h"
#include "fs/entries/name_class.h"
#include "fs/lib/proc_names.h"
#include "fs/lib/settings.h"
#include "fs/request/dir.h"
#include "fs/request/file.h"
#include "fs/request/file_size.h"
#include "fs/request/invalidate.h"
#include "fs/request/link.h"
#include "fs/request/ops.h"
#include "fs/request/root_dir.h"

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
 * find the process gone drops the name itself (invalidate.h) and answers
 * ESTALE: the VFS then walks the path once more, asking us for every name on
 * it. Requests after it (a walk from a held descriptor of the gone process
 * comes back to the same nodes) get procfs's answer. */
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
	return invalidate_found_gone(dir) ? r : -ESTALE;
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
	if (process_gone && (n->cls->flags & NC_FILE_TABLE))
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
	if ((r = source_stat(n->path, st, AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH)) == 0) {
		if (n->kind == NODE_DEDUP_LINK)
			dedup_link_attr(n->cls, n->name, n->owner.tgid, st);
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

/* What the kernel may cache about a name of class cls in parent: the
 * class's life, narrowed by the state of the process it belongs to. Nothing
 * is cached inside a process that exited (a zombie, or a leader whose
 * threads live on): no event will come for its reaping. A cached name of a
 * process that exited still fails at once: every operation checks the
 * process generation. */
static enum name_life life_in(const struct node *parent, const struct name_class *cls,
			      const char *name)
{
	if (cls->life == LIFE_OBJECT || cls->life == LIFE_NONE)
		return cls->life;
	if (cls->life == LIFE_PROCESS) /* its exit event drops it (invalidate.c) */
		return process_cacheable(name_pid(name)) ? LIFE_PROCESS : LIFE_NONE;
	if (parent->owner.tgid && !process_cacheable(parent->owner.tgid))
		return LIFE_NONE;
	return cls->life;
}

/* The same for a node's attributes, asked again at each getattr. */
/* "Until an event says otherwise": see entry_timeout_for. */
#define PROCESS_LIFETIME_S 86400.0

/* In a task's directory, the directories count what changes without an
 * event (fd/ its open files in st_size, task/ its threads and net/ its
 * namespace's entries in st_nlink), and the links that stand for shared
 * ones (a thread's fd/, fdinfo/, net/, a thread id's task/) are asked again
 * soon (dedup): their attributes keep attr_timeout. */
#define NC_DEDUP_LINKS (NC_THREADS_LINK | NC_THREAD_FILES | NC_THREAD_NET)

/* A pid at the root that is a thread's: its group is another's. */
static int is_root_thread(const struct node *n)
{
	return n->cls->life == LIFE_PROCESS && n->owner.tgid != n->owner.pid;
}

/* A thread's directory keeps its attributes while the thread has not begun
 * to exit: its exit event, sent after that, drops them (invalidate.c). In a
 * pid view the events' thread ids cannot be told in the view's terms. */
static int thread_cacheable(pid_t tid)
{
	return !pid_view_active() && !pidgen_exiting(tid);
}

static double attr_timeout_for(const struct node *n)
{
	enum name_life life = is_root_thread(n) ? LIFE_THREAD : n->cls->life;

	if (life == LIFE_NONE || life == LIFE_NAME ||
	    (life != LIFE_OBJECT && n->owner.tgid && !process_cacheable(n->owner.tgid)))
		return 0;
	/* A live leader's directory, and the files and links in its tasks'
	 * directories, change owner with its uid or gid, which an event says
	 * (invalidate.c drops its name, and every name and attribute below). */
	if (life == LIFE_PROCESS ||
	    (life == LIFE_TASK && (n->type != S_IFDIR || (n->cls->flags & NC_STABLE_ATTRS)) &&
	     !(n->cls->flags & NC_DEDUP_LINKS)))
		return PROCESS_LIFETIME_S;
	if (life == LIFE_THREAD)
		return thread_cacheable(n->owner.pid) ? PROCESS_LIFETIME_S : 0;
	/* a namespace named in a live process: as long as its name (entry_timeout_for) */
	if (life == LIFE_OBJECT && (n->cls->flags & NC_STABLE_ATTRS) && n->owner.tgid &&
	    process_cacheable(n->owner.tgid))
		return PROCESS_LIFETIME_S;
	return pf.attr_timeout;
}

#define DEDUP_RECHECK_S 1.0

/* "Until the exit event drops it": a live leader's name and the fixed names
 * in its tasks' directories (the kernel keeps them while memory allows;
 * invalidate.c drops the leader's name at the exit, the names below with it
 * and those held open; a thread's directory is asked again at every walk).
 * A cached name of a process that exited still fails at once: every
 * operation checks the process generation. */
static double entry_timeout_for(const struct node *parent, enum name_life life)
{
	/* A thread is reaped as it exits, before its exit event can be applied:
	 * its name kept until then would answer stat() for a thread gone from
	 * procfs. (A leader is a zombie until waited for, which covers that.) */
	if (life == LIFE_NONE || life == LIFE_THREAD)
		return 0;
	/* life_in gave these only inside a live leader whose exit an event will say */
	if (life == LIFE_PROCESS || life == LIFE_TASK)
		return PROCESS_LIFETIME_S;
	/* A link target naming one object ("net:[N]" in ns/) names it for good:
	 * whatever link points to it, the name is the object's. */
	if (life == LIFE_OBJECT && parent->owner.tgid && process_cacheable(parent->owner.tgid))
		return PROCESS_LIFETIME_S;
	return pf.entry_timeout;
}

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

	if ((r = node_alive(p)) || (r = child_path(p, name, path, sizeof(path))))
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
			       p->kind == NODE_ROOT ? root_dir_fixed_id(name) : 0);
	if (!n)
		return -ENOMEM;
	life = life_in(p, cls, name);
	memset(e, 0, sizeof(*e));
	e->ino = node_ino(n);
	e->generation = n->serial;
	e->attr = st;
	e->attr_timeout = attr_timeout_for(n);
	e->entry_timeout = entry_timeout_for(p, life);
	/* Whether a thread shares its leader's files is asked again soon: a
	 * thread that unshares gets its own directory within a second. (A
	 * thread id's task/ is a link, and a leader's a directory, for good.) */
	if ((cls->flags & (NC_THREAD_FILES | NC_THREAD_NET)) && e->entry_timeout > DEDUP_RECHECK_S)
		e->entry_timeout = DEDUP_RECHECK_S;
	return 0;
}

struct node *entry_resolve_fixed(uint64_t id)
{
	const char *name = root_dir_fixed_name(id);
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
	struct node *p = node_from_ino(parent);
	const struct name_class *cls;
	struct fuse_entry_param e;
	enum name_life life;
	struct caller c;
	int r;

	if (p->type != S_IFDIR)
		return reply_err(req, -ENOTDIR);
	cls = name_classify(p->cls, name);
	if ((r = caller_begin(req, reader_ns_kinds(cls, 0), &c)))
		return reply_err(req, r);
	r = lookup_as(p, cls, name, c.tid, &e);
	caller_end(&c);
	if (r == -ENOENT && ((life = life_in(p, cls, name)) == LIFE_FIXED || life == LIFE_TASK)) {
		/* A fixed name that is absent stays absent (PID/ctty, say). */
		memset(&e, 0, sizeof(e));
		e.entry_timeout = entry_timeout_for(p, life);
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

/* A node's attributes: fstat() on an open file asks about that file, which
 * outlives its name (a zombie's fdinfo/N, an exited process's status); else
 * the source's entry, as the caller (begun). */
static int attributes(struct node *n, int fd, struct stat *st)
{
	if (fd < 0)
		return node_stat(n, st);
	if (fstat(fd, st))
		return -errno;
	if (n->kind == NODE_LINK_TARGET)
		link_target_fixup(st);
	return 0;
}

static void reply_attributes(fuse_req_t req, struct node *n, int fd, struct caller *c)
{
	struct stat st;
	int r = attributes(n, fd, &st);

	if (c)
		caller_end(c);
	if (r)
		return reply_err(req, r);
	file_size_before_reply(n, fd >= 0);
	fuse_reply_attr(req, &st, attr_timeout_for(n));
}

void pf_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct node *n = node_from_ino(ino);
	/* the root has no handle (dir.c); a helper's has no fd (file.c) */
	int fd = !fi || ino == FUSE_ROOT_ID ? -1
		 : n->type == S_IFDIR ? dir_handle_fd(fi) : open_file_fd(fi);
	struct caller c;
	int r;

	if (fd >= 0)
		return reply_attributes(req, n, fd, NULL);
	if ((r = caller_begin(req, reader_ns_kinds(n->cls, 0), &c)))
		return reply_err(req, r);
	reply_attributes(req, n, -1, &c);
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
		int fd = fi ? open_file_fd(fi) : -1;
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
	struct node *n = node_from_ino(ino);
	struct caller c;
	int r;

	if (pf.read_only)
		return reply_err(req, -EROFS);
	if ((r = caller_begin(req, reader_ns_kinds(n->cls, 0), &c)))
		return reply_err(req, r);
	r = apply_setattr(n, attr, to_set, fi);
	if (r) {
		caller_end(&c);
		return reply_err(req, r);
	}
	reply_attributes(req, n, -1, &c);
}

void pf_access(fuse_req_t req, fuse_ino_t ino, int mask)
{
	struct node *n = node_from_ino(ino);
	int flags = AT_EACCESS | (n->kind == NODE_LINK_TARGET ? 0 : AT_SYMLINK_NOFOLLOW);
	struct caller c;
	int r;

	if ((r = caller_begin(req, reader_ns_kinds(n->cls, 0), &c)))
		return reply_err(req, r);
	r = source_access(n->path, mask, flags);
	r = node_walk_error(n, r ? r : node_alive(n));
	caller_end(&c);
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

