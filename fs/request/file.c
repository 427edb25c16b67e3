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
#include "fs/caller/fair.h"
#include "fs/caller/ns_helper.h"
#include "fs/caller/source_op.h"
#include "fs/entries/name_class.h"
#include "fs/entries/self_state.h"
#include "fs/lib/cleanup.h"
#include "fs/lib/settings.h"
#include "fs/lib/thread_buf.h"
#include "fs/request/entry.h"
#include "fs/request/file_size.h"
#include "fs/request/handle.h"
#include "fs/request/ops.h"
#include "fs/resources/resources.h"

/* Flags the source open may honour; creation is refused separately. */
#define PASSED_OPEN_FLAGS (O_ACCMODE | O_APPEND | O_TRUNC | O_NONBLOCK | O_DSYNC | O_SYNC | O_NOATIME)
/* What a helper's open for each read or write keeps of them. */
#define REOPEN_FLAGS (O_NONBLOCK | O_DSYNC | O_SYNC | O_NOATIME)

struct open_file {
	int fd;                   /* the source file, or -1 with a helper */
	int via_helper;           /* served by a helper process: */
	struct ns_helper *helper; /* it opens, reads and writes in the opener's namespaces
				   * (NULL once none could be had: EPERM) */
	int flags;                /* the source open's flags */
	pthread_mutex_t lock;     /* readers of one handle, over self_text */
	char *self_text;          /* the text made for its reader: its own state
				   * (self_state.c) or its cgroup's numbers (fs/resources/) */
	size_t self_len;
	unsigned char res_file;   /* enum res_file: made from a cgroup's numbers */
	struct res_target res;    /* whose, decided at open */
	struct fair_hold share;   /* counted in its opener's shares (fair.h) */
};

int open_file_fd(const struct fuse_file_info *fi)
{
	const struct open_file *of = handle_find(fi->fh);

	return of ? of->fd : -1;
}

static int writes(int flags)
{
	return (flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC);
}

static int source_flags(const struct node *n, int flags)
{
	/* A link target is opened through its link, as procfs's magic links do. */
	return (flags & PASSED_OPEN_FLAGS) | O_CLOEXEC | O_NOCTTY |
	       (n->kind == NODE_LINK_TARGET ? 0 : O_NOFOLLOW);
}

/* A worker's source open of n as the caller, into of->fd. */
static int open_by_worker(const struct caller *c, struct node *n, struct open_file *of)
{
	(void)c; /* begun: the worker acts as it */
	of->fd = openat(pf.srcfd, n->path, of->flags);
	return node_walk_error(n, node_error(n, of->fd < 0 ? -errno : 0));
}

/* Opens n as the caller: into of->fd, or through a helper when the
 * caller's namespaces that n depends on are not the daemon's and one
 * thread cannot enter them, or when no worker may stand for the caller
 * (source_op.h). */
static int open_as_caller(fuse_req_t req, struct node *n, struct open_file *of)
{
	struct caller c;
	int r, helper;

	if ((r = caller_begin(req, reader_ns_kinds(n->cls, 1), &c)))
		return r;
	helper = c.ns.foreign || source_needs_helper(n->path);
	if (!helper)
		r = open_by_worker(&c, n, of);
	caller_end(&c);
	if (!helper)
		return r;
	/* never the daemon's own namespace's answer for the caller's */
	if ((c.ns.foreign & RNS(RNS_PID)) || !(of->helper = ns_helper_get(c.tid)))
		return -EPERM;
	r = ns_helper_open(&of->helper, c.tid, n->path, of->flags);
	/* a content that does not depend on the caller's user namespace, for a
	 * caller whose ids no helper can take: the worker's */
	if (!c.ns.foreign && source_helper_declined(n->path, r)) {
		ns_helper_put(of->helper);
		of->helper = NULL;
		if ((r = caller_begin(req, reader_ns_kinds(n->cls, 1), &c)))
			return r;
		r = open_by_worker(&c, n, of);
		caller_end(&c);
		return r;
	}
	of->via_helper = 1;
	return node_walk_error(n, node_error(n, r == -EOVERFLOW ? -EPERM : r));
}

static void open_file_free(struct open_file *of)
{
	if (of->fd >= 0)
		close(of->fd);
	ns_helper_put(of->helper);
	fair_handle_release(&of->share);
	pthread_mutex_destroy(&of->lock);
	free(of->self_text);
	free(of);
}

/* Whose cgroup a resource file shows its opener: decided once per open
 * (LXCFS decides at each read; the init of a namespace does not change,
 * and its cgroups are read afresh with each text). */
static void resource_target(fuse_req_t req, const struct node *n, struct open_file *of)
{
	of->res_file = (unsigned char)NC_RES_FILE(n->cls->flags);
	of->res = resources_target(fuse_req_ctx(req)->pid);
}

/* A source open of n as the caller, for the kernel's open flags. */
static int open_file_make(fuse_req_t req, struct node *n, int flags, struct open_file **made)
{
	struct open_file *of;
	int r;

	if (pf.read_only && writes(flags))
		return -EROFS;
	of = calloc(1, sizeof(*of));
	if (!of)
		return -ENOMEM;
	of->fd = -1;
	of->flags = source_flags(n, flags);
	pthread_mutex_init(&of->lock, NULL);
	if ((r = fair_handle_take(req, &of->share)) || (r = open_as_caller(req, n, of))) {
		open_file_free(of);
		return r;
	}
	if (NC_RES_FILE(n->cls->flags) && resources_on())
		resource_target(req, n, of);
	file_size_opening(n);
	*made = of;
	return 0;
}

static void open_file_close(struct node *n, struct open_file *of)
{
	file_size_released(n);
	open_file_free(of);
}

void pf_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct node *n = node_from_ino(ino);
	struct open_file *of;
	int r;

	if ((r = open_file_make(req, n, fi->flags, &of)))
		return reply_err(req, r);
	if (!(fi->fh = handle_give(of, n))) {
		open_file_close(n, of);
		return reply_err(req, -ENOMEM);
	}
	fi->direct_io = 1;
	fi->keep_cache = 0;
	if (fuse_reply_open(req, fi) == -ENOENT) /* interrupted */
		open_file_close(n, handle_drop(fi->fh));
}

/* The open file a handle names. One the kernel kept from an earlier server
 * (on a fixed node: handle.c) is opened again, as its reader, at its first
 * use here, so that a reader holding meminfo open (top) reads on across a
 * restart. */
static struct open_file *open_file_of(fuse_req_t req, struct node *n,
				      const struct fuse_file_info *fi, int *err)
{
	struct open_file *of = handle_find(fi->fh), *named;

	if (of)
		return of;
	if ((*err = open_file_make(req, n, fi->flags, &of)))
		return NULL;
	named = handle_adopt(fi->fh, of, n);
	if (named != of)
		open_file_close(n, of);
	if (!named)
		*err = -ENOMEM;
	return named;
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

/* One read of the source as the caller (in its namespaces: caller_begin
 * was made for a local file). */
static ssize_t read_source(const struct node *n, struct open_file *of, pid_t tid, char *buf,
			   size_t size, off_t off)
{
	ssize_t got;

	if (of->via_helper && !of->helper)
		return -EPERM;
	if (of->via_helper)
		return gone_or(n, ns_helper_read(&of->helper, tid, n->path,
						 O_RDONLY | (of->flags & REOPEN_FLAGS), buf, size, off));
	got = read_at(of->fd, buf, size, off);
	return got < 0 ? -errno : got;
}

/* A task reading its own state: its whole text, read at offset 0 and
 * given as procfs gives it to the task itself; reads go on in it. */
struct source_reader {
	const struct node *n;
	struct open_file *of;
	pid_t tid;
};

static ssize_t read_for(void *ctx, char *buf, size_t size, off_t off)
{
	struct source_reader *r = ctx;

	return read_source(r->n, r->of, r->tid, buf, size, off);
}

/* A text made at once (a seq file of one record, which fills a read unless
 * at its end: a short read ends it), read whole from offset 0 and
 * NUL-terminated into a new buffer. Its length, or -errno. */
#define WHOLE_TEXT_START 4096
#define WHOLE_TEXT_MAX (4 * 1024 * 1024)

static ssize_t read_whole(struct source_reader *r, size_t cap, char **text)
{
	size_t len = 0;
	char *buf = malloc(cap), *more;
	ssize_t got;

	if (!buf)
		return -ENOMEM;
	while ((got = read_for(r, buf + len, cap - 1 - len, (off_t)len)) > 0) {
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

static int take_self_text(const struct node *n, struct open_file *of, pid_t tid)
{
	struct source_reader r = { n, of, tid };
	ssize_t len = read_whole(&r, WHOLE_TEXT_START, &of->self_text);

	if (len < 0)
		return (int)len;
	of->self_len = self_state_fix(n, of->self_text, (size_t)len);
	return 0;
}

/* A resource file's text: the source's, made into the cgroup's (fs/resources/),
 * with the caller's credentials (entered already but through a helper). */
static int take_resource_text(const struct node *n, struct open_file *of, const struct caller *c)
{
	struct source_reader r = { n, of, c->tid };
	char *src = NULL, *text = NULL;
	/* meminfo, stat and cpuinfo fit the first read of 64 KiB */
	ssize_t len = read_whole(&r, 64 * 1024, &src);
	size_t text_len = 0;
	int made;

	if (len < 0)
		return (int)len;
	if (of->via_helper && caller_enter(c)) {
		free(src);
		return -EACCES;
	}
	made = resources_render(of->res_file, &of->res, src, &text, &text_len);
	if (of->via_helper)
		caller_leave();
	if (made < 0) {
		free(src);
		return made;
	}
	if (made == 0) { /* the source's text stands */
		text = src;
		text_len = (size_t)len;
	} else {
		free(src);
	}
	of->self_text = text;
	of->self_len = text_len;
	return 0;
}

static size_t from_self_text(const struct open_file *of, char *buf, size_t size, off_t off)
{
	size_t start = (size_t)off < of->self_len ? (size_t)off : of->self_len;
	size_t len = of->self_len - start < size ? of->self_len - start : size;

	memcpy(buf, of->self_text + start, len);
	return len;
}

void pf_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	struct node *n = node_from_ino(ino);
	char *buf = thread_buf(BUF_REPLY, size);
	struct open_file *of;
	struct caller c;
	ssize_t got;
	int r;

	if (!buf)
		return reply_err(req, -ENOMEM);
	/* A read for the kernel's page cache (splice, sendfile, mmap, before
	 * the kernel's copy_splice_read for direct io) carries no lock owner:
	 * its pages would serve every reader of the file (file_size.c). */
	if (!fi->lock_owner)
		return reply_err(req, -EINVAL);
	if (!(of = open_file_of(req, n, fi, &r)))
		return reply_err(req, r);
	/* Some entries are evaluated at each read (a uts name, a cgroup path). */
	if (of->via_helper)
		caller_load(req, &c);
	else if ((r = caller_begin(req, n->cls->reader_ns & RNS_AT_EACH_READ, &c)))
		return reply_err(req, r);
	pthread_mutex_lock(&of->lock);
	got = 0;
	if (off == 0 || (of->res_file && !of->self_text)) {
		/* from the start: the reader's own state, its cgroup's numbers,
		 * or afresh */
		free(of->self_text);
		of->self_text = NULL;
		if (of->res_file)
			got = take_resource_text(n, of, &c);
		else if (self_state_applies(n, c.tid))
			got = take_self_text(n, of, c.tid);
	}
	if (got == 0)
		got = of->self_text ? (ssize_t)from_self_text(of, buf, size, off)
				    : read_source(n, of, c.tid, buf, size, off);
	pthread_mutex_unlock(&of->lock);
	if (!of->via_helper)
		caller_end(&c);
	if (got < 0)
		return reply_err(req, (int)got);
	fuse_reply_buf(req, buf, (size_t)got);
}

void pf_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
	      struct fuse_file_info *fi)
{
	struct node *n = node_from_ino(ino);
	struct open_file *of;
	struct caller c;
	ssize_t done;
	int r;

	if (pf.read_only)
		return reply_err(req, -EROFS);
	if (!(of = open_file_of(req, n, fi, &r)))
		return reply_err(req, r);
	if (of->via_helper) {
		caller_load(req, &c);
		/* asked before too: a write must not reach a new owner of the pid */
		done = !of->helper ? -EPERM
		       : (r = node_alive(n)) ? r
		       : gone_or(n, ns_helper_write(&of->helper, c.tid, n->path,
						    O_WRONLY | (of->flags & (O_APPEND | REOPEN_FLAGS)),
						    buf, size, off));
		if (done < 0)
			return reply_err(req, (int)done);
		return (void)fuse_reply_write(req, (size_t)done);
	}
	if ((r = caller_begin(req, n->cls->reader_ns & RNS_AT_EACH_READ, &c)))
		return reply_err(req, r);
	done = write_at(of->fd, buf, size, off);
	r = done < 0 ? -errno : 0;
	caller_end(&c);
	if (r)
		return reply_err(req, r);
	fuse_reply_write(req, (size_t)done);
}

void pf_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct open_file *of = handle_drop(fi->fh);

	if (of) /* else an earlier server's, never used here */
		open_file_close(node_from_ino(ino), of);
	fuse_reply_err(req, 0);
}
