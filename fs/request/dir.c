/* Directory listings, passed through from the source.
 *
 * Offsets are the source's own: procfs encodes the tgid in root offsets and
 * the fd number in fd/ offsets, so a listing resumed at an offset continues
 * after the last entry returned, whatever started or exited meanwhile.
 */
#include "fs/request/dir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs/caller/caller.h"
#include "fs/caller/fair.h"
#include "fs/caller/source_op.h"
#include "fs/entries/dedup.h"
#include "fs/entries/name_class.h"
#include "fs/lib/cleanup.h"
#include "fs/lib/settings.h"
#include "fs/lib/thread_buf.h"
#include "fs/request/dir_reply.h"
#include "fs/request/handle.h"
#include "fs/request/node_life.h"
#include "fs/request/request.h"
#include "fs/request/root_dir.h"
#include "fs/request/thread_dir.h"

struct dir_handle {
	struct handle_head head; /* its fd: first, for handle_fd */
	int by_helper;  /* a helper opened it for the caller (source_op.h): it is
			 * listed as the daemon, as the helper found the caller may */
	int own_fd;     /* the daemon's own fd table: fd is in it, and is not
			 * listed (-1 else): no reader of /proc sees such an fd */
	pthread_mutex_t lock; /* the fd's position is shared by its readers */
	off_t at;       /* the fd's position, where known (-1 else): a listing
			 * that goes on reads on without a seek */
	struct fair_hold share; /* counted in its opener's shares (fair.h) */
};

/* A source open of the request's directory as the caller. */
static int dir_handle_make(struct request *rq, struct dir_handle **made)
{
	struct node *n = rq->node;
	__do_close int fd = -1;
	struct fair_hold share;
	struct dir_handle *h;
	int r, by_helper = 0;

	if ((r = fair_handle_take(rq->req, &share)))
		return r;
	if ((r = request_act(rq, reader_ns_kinds(n->cls, 0)))) {
		fair_handle_release(&share);
		return r;
	}
	fd = source_open_dir(n->path, &by_helper);
	r = node_walk_error(n, node_error(n, fd < 0 ? fd : 0));
	request_act_end(rq);
	if (r || !(h = malloc(sizeof(*h)))) {
		fair_handle_release(&share);
		return r ? r : -ENOMEM;
	}
	h->head.fd = move_fd(&fd);
	h->by_helper = by_helper;
	h->own_fd = (n->cls->flags & NC_FILE_TABLE) && source_is_daemons(n->path) ? h->head.fd : -1;
	h->share = share;
	h->at = 0;
	pthread_mutex_init(&h->lock, NULL);
	*made = h;
	return 0;
}

static void dir_handle_free(struct dir_handle *h)
{
	close(h->head.fd);
	fair_handle_release(&h->share);
	pthread_mutex_destroy(&h->lock);
	free(h);
}

/* The directory a handle names; one of an earlier server (handle.c) is
 * opened again at its first use here, as file.c does. */
static struct dir_handle *dir_handle_of(struct request *rq, const struct fuse_file_info *fi,
					int *err)
{
	struct dir_handle *h = handle_find(fi->fh), *named;

	if (h)
		return h;
	if ((*err = dir_handle_make(rq, &h)))
		return NULL;
	named = handle_adopt(fi->fh, h, rq->node);
	if (named != h)
		dir_handle_free(h);
	if (!named)
		*err = -ENOMEM;
	return named;
}

void pf_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct dir_handle *h;
	int r;

	REQUEST_BEGIN(rq, req, ino);
	/* The root is listed from the index by offset alone: no handle, so a
	 * handle of an earlier daemon on the root is as good as any. */
	if (ino == FUSE_ROOT_ID) {
		fi->fh = 0;
		return (void)fuse_reply_open(req, fi);
	}
	if ((r = dir_handle_make(&rq, &h)))
		return request_fail(&rq, r);
	if (!(fi->fh = handle_give(h, rq.node))) {
		dir_handle_free(h);
		return request_fail(&rq, -ENOMEM);
	}
	if (fuse_reply_open(req, fi) == -ENOENT)
		dir_handle_free(handle_drop(fi->fh));
}

/* One getdents of h, as the caller, or as the daemon where the caller's
 * helper decided (procfs asks some as it lists: map_files, ptrace). */
static ssize_t source_entries(const struct dir_handle *h, char *raw, size_t size)
{
	ssize_t got;

	if (!h->by_helper)
		return getdents64(h->head.fd, raw, size);
	caller_step_out();
	got = getdents64(h->head.fd, raw, size);
	caller_step_in();
	return got;
}

static int is_fd_name(const char *name, int fd)
{
	char own[16];

	snprintf(own, sizeof(own), "%d", fd);
	return fd >= 0 && !strcmp(name, own);
}

/* The most source bytes whose entries surely fit in what the reply has
 * left. A getdents64 entry takes at least MIN_RAW_ENTRY bytes (a name of up
 * to 4 characters), and for those the reply's entry is the largest in
 * proportion (in READDIRPLUS format, 6.7 times). */
#define MIN_RAW_ENTRY 24
/* and at most this (a name of 255 characters): a getdents64 of a buffer
 * this large that fails with EINVAL fails for another reason (procfs's
 * net/ of a zombie), which is the listing's answer */
#define MAX_RAW_ENTRY 280
static size_t raw_budget(const struct dir_reply *r)
{
	size_t most = r->plus ? fuse_add_direntry_plus(r->req, NULL, 0, "1234", NULL, 0)
			      : fuse_add_direntry(r->req, NULL, 0, "1234", NULL, 0);

	return (r->size - r->used) / most * MIN_RAW_ENTRY;
}

/* Converts source entries into the reply until it is full. Only what fits
 * is read: procfs makes each entry it lists (a task/ of 10,000 threads
 * costs it milliseconds), and what was read past the reply would be read
 * again by the next request, from a seek that makes procfs find its place
 * in the list from the start. So the source's position stays at the last
 * entry sent, where the next request of a listing goes on (h->at). */
static int fill_entries(struct dir_reply *r, struct dir_handle *h)
{
	char *raw = thread_buf(BUF_SOURCE, r->size);
	struct dedup_listing dl;
	size_t budget;

	if (!raw)
		return -ENOMEM;
	dedup_listing_init(r->dir, &dl);
	while ((budget = raw_budget(r)) >= MIN_RAW_ENTRY) {
		ssize_t got = source_entries(h, raw, budget);

		if (got < 0 && (errno != EINVAL || budget >= MAX_RAW_ENTRY))
			return -errno;
		if (got <= 0) /* or EINVAL: the next entry is longer than the budget */
			return 0;
		for (ssize_t pos = 0; pos < got;) {
			struct dirent64 *de = (struct dirent64 *)(raw + pos);

			if (!is_fd_name(de->d_name, h->own_fd) &&
			    !dir_reply_add(r, de->d_name, dedup_dtype(&dl, de->d_name, de->d_type),
					   de->d_ino, de->d_off)) {
				h->at = -1; /* read past the reply after all: seek next time */
				return 0;
			}
			h->at = de->d_off;
			pos += de->d_reclen;
		}
	}
	return 0;
}

/* Places the source at off, unless it is there already: a seek to
 * elsewhere makes procfs look for the place from the start of the list. */
static int seek_source(struct dir_handle *h, off_t off)
{
	if (h->at == off)
		return 0;
	h->at = -1;
	if (lseek(h->head.fd, off, SEEK_SET) < 0)
		return -errno;
	h->at = off;
	return 0;
}

/* A listing of the request's directory from offset off, as the caller;
 * plus: READDIRPLUS. */
static void list(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi,
		 int plus)
{
	struct dir_handle *h = NULL;
	struct dir_reply reply;
	int r = 0;

	REQUEST_BEGIN(rq, req, ino);
	if (ino != FUSE_ROOT_ID && !(h = dir_handle_of(&rq, fi, &r)))
		return request_fail(&rq, r);
	if ((r = request_act(&rq, reader_ns_kinds(rq.node->cls, 0))))
		return request_fail(&rq, r);
	dir_reply_init(&reply, req, rq.node, size, plus);
	if (!reply.out) {
		r = -ENOMEM;
	} else if (ino == FUSE_ROOT_ID) {
		root_dir_fill(&reply, off);
	} else {
		pthread_mutex_lock(&h->lock);
		if (thread_dir_listed(rq.node))
			r = thread_dir_fill(&reply, off);
		else if (!(r = seek_source(h, off)))
			r = fill_entries(&reply, h);
		pthread_mutex_unlock(&h->lock);
	}
	request_act_end(&rq);
	dir_reply_send(&reply, r);
}

void pf_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	list(req, ino, size, off, fi, 0);
}

void pf_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	list(req, ino, size, off, fi, 1);
}

/* Releases count no request: one is never refused. */
void pf_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct dir_handle *h =
		ino == FUSE_ROOT_ID || !request_node(ino) ? NULL : handle_drop(fi->fh);

	if (h) /* else the root's, or an earlier server's (never touched) */
		dir_handle_free(h);
	fuse_reply_err(req, 0);
}
