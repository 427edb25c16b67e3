/* File contents: every open is a source open made as the caller, every read
 * and write a pread/pwrite on it as the caller of that request.
 *
 * direct_io because procfs makes its content at each read: nothing of it is
 * cached (file_size.c for splice and sendfile). Reads keep the caller's credentials too,
 * since procfs decides some content at read time (PID/stat hides wchan and
 * code addresses from callers that may not ptrace the task).
 *
 * An entry procfs evaluates in the reader's user, time or pid namespace,
 * opened by a caller whose namespace of that kind is not the daemon's, is
 * served by a helper process in the caller's namespaces (ns_helper.h): it
 * opens, reads and writes there. So is every file of the daemon's own
 * processes (source_op.h: a worker would be let through as their thread
 * group). A caller in another pid namespace gets
 * EPERM for the entries of its active pid namespace (ns_last_pid, pid_max):
 * a helper in it would be one of its processes.
 */
#include "fs/request/file.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs/caller/caller.h"
#include "fs/caller/ns_helper.h"
#include "fs/entries/content.h"
#include "fs/entries/name_class.h"
#include "fs/lib/fuse_passthrough.h"
#include "fs/lib/settings.h"
#include "fs/lib/thread_buf.h"
#include "fs/request/handle.h"
#include "fs/request/node_life.h"
#include "fs/request/open_file.h"
#include "fs/request/read_wait.h"
#include "fs/request/request.h"
#include "fs/request/snapshot.h"

static ssize_t read_text(struct request *rq, struct open_file *of, int flags, char *buf,
			 size_t size, off_t off);
static int act_for_io(struct request *rq, const struct open_file *of);
static int act_for_read(struct request *rq, const struct open_file *of);

/* A read of a snapshot in the making (snapshot.h): the exact path's. */
static ssize_t read_for_snapshot(struct request *rq, struct open_file *of, char *buf,
				 size_t size, off_t off)
{
	ssize_t got;
	int r;

	if ((r = act_for_read(rq, of)))
		return r;
	pthread_mutex_lock(&of->lock);
	got = read_text(rq, of, of->flags, buf, size, off);
	pthread_mutex_unlock(&of->lock);
	request_act_end(rq);
	return got;
}

void pf_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct open_file *of;
	int r, snapshot;

	REQUEST_BEGIN(rq, req, ino);
	if ((r = open_file_make(&rq, fi->flags, &of)))
		return request_fail(&rq, r);
	snapshot = snapshot_take(&rq, of, fi->flags, read_for_snapshot);
	if (!snapshot && snapshot_met(rq.node)) {
		open_file_close(rq.node, of);
		return request_fail(&rq, -ESTALE);
	}
	if (!(fi->fh = handle_give(of, rq.node))) {
		open_file_close(rq.node, of);
		return request_fail(&rq, -ENOMEM);
	}
	fi->direct_io = 1;
	fi->keep_cache = 0;
	request_act_end(&rq);
	passthrough_reply_next(snapshot); /* the reply names it (transport.c) */
	r = fuse_reply_open(req, fi);
	passthrough_reply_next(0);
	if (r == -ENOENT) /* interrupted */
		open_file_close(rq.node, handle_drop(fi->fh));
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

/* A helper opens the path again at each read or write: once the opened
 * process is gone (its pid perhaps another's now), its answer is dropped
 * for procfs's to a handle of a gone process. Asked after the helper's
 * call, so that a pid reused before or during it is seen. */
static ssize_t gone_or(const struct node *n, ssize_t r)
{
	int gone = node_alive(n);

	return gone ? gone : r;
}

/* Who a read of the source is for: the caller of req, as tid, reading n
 * through of; nonblock: its read must not wait (its file's O_NONBLOCK now). */
struct source_reader {
	fuse_req_t req;
	const struct node *n;
	struct open_file *of;
	pid_t tid;
	int nonblock;
};

/* One read of the source as the caller (in its namespaces: request_act
 * was made for a local file). A read that waits for the kernel's events
 * ends at the caller's interrupt (read_wait.h). */
static ssize_t read_source(const struct source_reader *r, char *buf, size_t size, off_t off)
{
	struct open_file *of = r->of;
	ssize_t got;

	if (of->via_helper && !of->helper)
		return -EPERM;
	if (of->via_helper)
		return gone_or(r->n, ns_helper_read(&of->helper, r->tid, r->n->path,
						    O_RDONLY | (of->flags & REOPEN_FLAGS), buf, size,
						    off));
	if (r->n->cls->flags & NC_READ_WAITS)
		return read_wait(r->req, of->head.fd, buf, size, r->nonblock);
	got = read_at(of->head.fd, buf, size, off);
	return got < 0 ? -errno : got;
}

/* The source's whole text, read from offset 0 for a made text (content.h);
 * the reads after it go on in the made text.
 *
 * A text made at once (a seq file of one record, which fills a read unless
 * at its end: a short read ends it), read whole from offset 0 and
 * NUL-terminated into a new buffer. Its length, or -errno. */
#define WHOLE_TEXT_MAX (4 * 1024 * 1024)

static ssize_t read_whole(struct source_reader *r, size_t cap, char **text)
{
	size_t len = 0;
	char *buf = malloc(cap), *more;
	ssize_t got;

	if (!buf)
		return -ENOMEM;
	while ((got = read_source(r, buf + len, cap - 1 - len, (off_t)len)) > 0) {
		len += (size_t)got;
		if (len < cap - 1)
			break;
		if (cap >= WHOLE_TEXT_MAX || !(more = realloc(buf, cap *= 2))) {
			got = cap >= WHOLE_TEXT_MAX ? 0 : -ENOMEM;
			break;
		}
		buf = more;
	}
	if (got < 0) {
		free(buf);
		return got;
	}
	buf[len] = '\0';
	*text = buf;
	return (ssize_t)len;
}

/* The reader's text at a read from the start: made by the row's content
 * operations (content.h) from the source's whole text. */
static int take_made_text(struct request *rq, struct source_reader *r)
{
	struct open_file *of = r->of;
	const struct content_ops *ops = of->content;
	const struct caller *c = &rq->caller;
	char *src = NULL, *text = NULL;
	ssize_t len = read_whole(r, ops->first_read, &src);
	int helper_acts = ops->as_caller && of->via_helper, made;
	size_t text_len = 0;

	if (len < 0)
		return (int)len;
	/* a helper read the source: the worker acts as the caller for make() */
	if (helper_acts && caller_enter(c)) {
		free(src);
		return -EACCES;
	}
	made = ops->make(rq->node, &of->content_state, src, (size_t)len, &text, &text_len);
	if (helper_acts)
		caller_leave();
	if (made <= 0) {
		if (made < 0) {
			free(src);
			return made;
		}
		text = src; /* the source's text stands */
		text_len = (size_t)len;
	} else if (text != src) {
		free(src);
	}
	of->made_text = text;
	of->made_len = text_len;
	return 0;
}

static size_t from_made_text(const struct open_file *of, char *buf, size_t size, off_t off)
{
	size_t start = (size_t)off < of->made_len ? (size_t)off : of->made_len;
	size_t len = of->made_len - start < size ? of->made_len - start : size;

	memcpy(buf, of->made_text + start, len);
	return len;
}

/* The caller a read or write is made for: acting as it for a worker's
 * file, in the namespaces evaluated at each read (a uts name, a cgroup
 * path); a helper's file is read by the helper, as it. */
static int act_for_io(struct request *rq, const struct open_file *of)
{
	if (!of->via_helper)
		return request_act(rq, rq->node->cls->reader_ns & RNS_AT_EACH_READ);
	caller_load(rq->req, &rq->caller);
	return 0;
}

/* What a read of of from off gives its caller, whose file has flags now: a
 * text made by its row's content operations (at offset 0, read on from
 * there), or the source's. */
static ssize_t read_text(struct request *rq, struct open_file *of, int flags, char *buf,
			 size_t size, off_t off)
{
	const struct content_ops *ops = of->content;
	const struct caller *c = &rq->caller;
	struct node *n = rq->node;
	struct source_reader r = { rq->req, n, of, c->tid, !!(flags & O_NONBLOCK) };
	ssize_t got = 0;

	if (ops && (off == 0 || (ops->any_offset && !of->made_text))) {
		free(of->made_text);
		of->made_text = NULL;
		if (ops->applies(n, &of->content_state, c->tid))
			got = take_made_text(rq, &r);
	}
	if (got == 0)
		got = of->made_text ? (ssize_t)from_made_text(of, buf, size, off)
				    : read_source(&r, buf, size, off);
	return got;
}

/* Whether a read of of must be made as its caller. Not for a file the caller
 * opened here whose read procfs makes without asking who reads
 * (NC_READ_UNCHECKED, name_class.h), unless a text made for the reader
 * reads what only the caller may: the bytes are the same whoever reads,
 * and the caller's capabilities and user namespace need not be asked
 * again (ps reads status and cmdline of every process). */
static int read_needs_caller(const struct node *n, const struct open_file *of)
{
	return of->via_helper || (of->content && of->content->as_caller) ||
	       !(n->cls->flags & NC_READ_UNCHECKED) || (n->cls->reader_ns & RNS_AT_EACH_READ);
}

static int act_for_read(struct request *rq, const struct open_file *of)
{
	if (read_needs_caller(rq->node, of))
		return act_for_io(rq, of);
	/* who reads, from the request alone: a task reading its own status
	 * gets its own state (self_state.c) */
	rq->caller.tid = fuse_req_ctx(rq->req)->pid;
	return 0;
}

void pf_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	char *buf = thread_buf(BUF_REPLY, size);
	struct open_file *of;
	ssize_t got;
	int r;

	REQUEST_BEGIN(rq, req, ino);
	if (!buf)
		return request_fail(&rq, -ENOMEM);
	/* A read for the kernel's page cache (splice, sendfile, mmap, before
	 * the kernel's copy_splice_read for direct io) carries no lock owner:
	 * its pages would serve every reader of the file (file_size.c). */
	if (!fi->lock_owner)
		return request_fail(&rq, -EINVAL);
	if (!(of = open_file_of(&rq, fi, &r)) || (r = act_for_read(&rq, of)))
		return request_fail(&rq, r);
	pthread_mutex_lock(&of->lock);
	got = read_text(&rq, of, fi->flags, buf, size, off);
	pthread_mutex_unlock(&of->lock);
	if (got < 0)
		return request_fail(&rq, (int)got);
	request_act_end(&rq);
	fuse_reply_buf(req, buf, (size_t)got);
}

/* A write through a helper, which opens the path again for it. */
static ssize_t write_by_helper(struct request *rq, struct open_file *of, const char *buf,
			       size_t size, off_t off)
{
	struct node *n = rq->node;
	int r;

	/* asked before too: a write must not reach a new owner of the pid */
	return !of->helper ? -EPERM
	       : (r = node_alive(n)) ? r
	       : gone_or(n, ns_helper_write(&of->helper, rq->caller.tid, n->path,
					    O_WRONLY | (of->flags & (O_APPEND | REOPEN_FLAGS)), buf,
					    size, off));
}

void pf_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
	      struct fuse_file_info *fi)
{
	struct open_file *of;
	ssize_t done;
	int r;

	REQUEST_BEGIN(rq, req, ino);
	if (pf.read_only)
		return request_fail(&rq, -EROFS);
	if (!(of = open_file_of(&rq, fi, &r)) || (r = act_for_io(&rq, of)))
		return request_fail(&rq, r);
	if (of->via_helper) {
		done = write_by_helper(&rq, of, buf, size, off);
	} else {
		done = write_at(of->head.fd, buf, size, off);
		done = done < 0 ? -errno : done;
	}
	if (done < 0)
		return request_fail(&rq, (int)done);
	request_act_end(&rq);
	fuse_reply_write(req, (size_t)done);
}

/* Releases count no request: one is never refused. */
void pf_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct node *n = request_node(ino);
	struct open_file *of = n ? handle_drop(fi->fh) : NULL;

	if (of) /* else an earlier server's (never touched) */
		open_file_close(n, of);
	fuse_reply_err(req, 0);
}
