/* Opening a file of the source as its opener (open_file.h): by the worker
 * acting as the caller, or by a helper process in the caller's namespaces
 * (file.c says when). */
#include "fs/request/open_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "fs/caller/source_op.h"
#include "fs/entries/name_class.h"
#include "fs/lib/settings.h"
#include "fs/request/file_size.h"
#include "fs/request/node_life.h"
#include "fs/request/snapshot_pool.h"

static int writes(int flags)
{
	return (flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC);
}

static int source_flags(const struct node *n, int flags)
{
	/* A link target is opened through its link, as procfs's magic links do.
	 * A read that waits waits in read_wait, where the caller's interrupt
	 * ends it, not in the source's read. */
	return (flags & PASSED_OPEN_FLAGS) | O_CLOEXEC | O_NOCTTY |
	       (n->kind == NODE_LINK_TARGET ? 0 : O_NOFOLLOW) |
	       (n->cls->flags & NC_READ_WAITS ? O_NONBLOCK : 0);
}

/* A worker's source open of n as the caller (acting), into of->head.fd. */
static int open_by_worker(struct node *n, struct open_file *of)
{
	of->head.fd = openat(pf.srcfd, n->path, of->flags);
	return node_walk_error(n, node_error(n, of->head.fd < 0 ? -errno : 0));
}

/* Opens n as the caller: into of->head.fd, or through a helper when the
 * caller's namespaces that n depends on are not the daemon's and one
 * thread cannot enter them, or when no worker may stand for the caller
 * (source_op.h). */
static int open_as_caller(struct request *rq, struct open_file *of)
{
	const struct caller *c = &rq->caller;
	struct node *n = rq->node;
	int r, helper;

	if ((r = request_act(rq, reader_ns_kinds(n->cls, 1))))
		return r;
	helper = c->ns.foreign || source_needs_helper(n->path);
	if (!helper)
		r = open_by_worker(n, of);
	request_act_end(rq);
	if (!helper)
		return r;
	/* never the daemon's own namespace's answer for the caller's */
	if ((c->ns.foreign & RNS(RNS_PID)) || !(of->helper = ns_helper_get(c->tid)))
		return -EPERM;
	r = ns_helper_open(&of->helper, c->tid, n->path, of->flags);
	/* a content that does not depend on the caller's user namespace, for a
	 * caller whose ids no helper can take: the worker's */
	if (!c->ns.foreign && source_helper_declined(n->path, r)) {
		ns_helper_put(of->helper);
		of->helper = NULL;
		if ((r = request_act(rq, reader_ns_kinds(n->cls, 1))))
			return r;
		r = open_by_worker(n, of);
		request_act_end(rq);
		return r;
	}
	of->via_helper = 1;
	return node_walk_error(n, node_error(n, r == -EOVERFLOW ? -EPERM : r));
}

static void open_file_free(struct open_file *of)
{
	poll_watch_drop(&of->poll_watch);
	if (atomic_load(&of->poll_fd) >= 0) {
		close(atomic_load(&of->poll_fd));
		fair_handle_release(&of->poll_share);
	}
	if (of->head.fd >= 0)
		close(of->head.fd);
	ns_helper_put(of->helper);
	fair_handle_release(&of->share);
	pthread_mutex_destroy(&of->lock);
	free(of->made_text);
	free(of);
}

int open_file_make(struct request *rq, int flags, struct open_file **made)
{
	struct node *n = rq->node;
	struct open_file *of;
	int r;

	if (pf.read_only && writes(flags))
		return -EROFS;
	of = calloc(1, sizeof(*of));
	if (!of)
		return -ENOMEM;
	of->head.fd = -1;
	atomic_init(&of->poll_fd, -1);
	of->flags = source_flags(n, flags);
	pthread_mutex_init(&of->lock, NULL);
	if ((r = fair_handle_take(rq->req, &of->share)) || (r = open_as_caller(rq, of))) {
		open_file_free(of);
		return r;
	}
	if (n->cls->content &&
	    n->cls->content->opened(n, fuse_req_ctx(rq->req)->pid, &of->content_state))
		of->content = n->cls->content;
	file_size_opening(n);
	*made = of;
	return 0;
}

void open_file_close(struct node *n, struct open_file *of)
{
	/* uncounted before the place is given back: an open waiting for the
	 * place (snapshot.c) then finds itself the inode's only open */
	file_size_released(n);
	/* the kernel let the inode's backing file go before it sent RELEASE */
	if (of->snapshot_id) {
		snapshot_pool_release(of->snapshot_id);
		atomic_store(&n->snapshot_held, false);
	}
	open_file_free(of);
}

struct open_file *open_file_of(struct request *rq, const struct fuse_file_info *fi, int *err)
{
	struct open_file *of = handle_find(fi->fh), *named;

	if (of)
		return of;
	if ((*err = open_file_make(rq, fi->flags, &of)))
		return NULL;
	named = handle_adopt(fi->fh, of, rq->node);
	if (named != of)
		open_file_close(rq->node, of);
	if (!named)
		*err = -ENOMEM;
	return named;
}

