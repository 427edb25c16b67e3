/* The entry operations of each kind of node (entry_kinds.h): a mirror of a
 * source path, a caller link (self, thread-self), a hidden link target
 * ("socket:[N]"), a thread's fd/, fdinfo/, net/ or task/ served as a link to
 * its leader's (dedup). */
#include "fs/request/entry_kinds.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>

#include "fs/caller/caller.h"
#include "fs/caller/source_op.h"
#include "fs/entries/dedup.h"
#include "fs/entries/name_class.h"
#include "fs/request/link.h"
#include "fs/request/node_life.h"

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

/* Until its exit event drops them, the kernel walks a gone process's names
 * with the owner and mode it cached (a leader's name is cached while it
 * lives; a thread's is asked at every walk), and asks again only when they
 * deny the caller (fuse_permission): answered with attributes, a reader other
 * than its owner got EACCES where procfs's walk fails with ENOENT. The first
 * to ask drops the names (ESTALE: the walk is made again); the ones after get
 * what fstat() on a held descriptor gets from procfs. */
static int gone_leader_walked(struct node *n)
{
	const struct node *dir = node_process_dir(n);

	return dir && dir->owner.pid == dir->owner.tgid && node_walk_error(n, -ENOENT) == -ESTALE;
}

/* The source's attributes of n's path; held: n may be held open, and keeps
 * its last attributes once its name is gone. */
static int source_attr(struct node *n, struct stat *st, int held)
{
	int r;

	if ((r = source_stat(n->path, st, AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH)) == 0) {
		if (n->kind == NODE_DEDUP_LINK)
			dedup_link_attr(n->cls, n->name, n->owner.tgid, st);
		/* a name that changed nature is another entry now */
		r = (st->st_mode & S_IFMT) != n->type ? -ENOENT : 0;
	}
	if (node_gone(n))
		return gone_leader_walked(n) ? -ESTALE : gone_stat(n, st, 1);
	if (r == -ENOENT && held)
		return gone_stat(n, st, 0);
	if (!r)
		node_remember(n, st);
	return r;
}

static int mirror_stat(struct node *n, struct stat *st)
{
	return source_attr(n, st, n->type != S_IFLNK); /* a link cannot be held open */
}

static int mirror_readlink(struct request *rq, char *buf, size_t len)
{
	struct node *n = rq->node;
	int r;

	if (n->type != S_IFLNK)
		return -EINVAL;
	if ((r = request_act(rq, reader_ns_kinds(n->cls, 1) & RNS_ENTERABLE)))
		return r;
	r = link_mirror_text(n, rq->caller.tid, buf, len);
	request_act_end(rq);
	return r;
}

static int unheld_stat(struct node *n, struct stat *st)
{
	return source_attr(n, st, 0);
}

static int caller_link_readlink(struct request *rq, char *buf, size_t len)
{
	caller_load(rq->req, &rq->caller);
	return link_caller_text(rq->node, &rq->caller, buf, len);
}

static int target_stat(struct node *n, struct stat *st)
{
	return link_target_stat(n, st);
}

static int dedup_link_readlink(struct request *rq, char *buf, size_t len)
{
	return node_error(rq->node, dedup_link_text(rq->node, buf, len));
}

static const struct entry_ops root_entry = { "root", unheld_stat, NULL };
static const struct entry_ops mirror_entry = { "mirror", mirror_stat, mirror_readlink };
static const struct entry_ops caller_link_entry = { "caller link", unheld_stat,
						    caller_link_readlink };
static const struct entry_ops link_target_entry = { "link target", target_stat, NULL };
static const struct entry_ops dedup_link_entry = { "dedup link", unheld_stat,
						   dedup_link_readlink };

static const struct entry_ops *const by_kind[] = {
	[NODE_ROOT] = &root_entry,
	[NODE_MIRROR] = &mirror_entry,
	[NODE_CALLER_LINK] = &caller_link_entry,
	[NODE_LINK_TARGET] = &link_target_entry,
	[NODE_DEDUP_LINK] = &dedup_link_entry,
};
_Static_assert(sizeof(by_kind) / sizeof(by_kind[0]) == NODE_DEDUP_LINK + 1,
	       "every node kind has its entry operations");

const struct entry_ops *entry_ops_of(const struct node *n)
{
	return by_kind[n->kind];
}
