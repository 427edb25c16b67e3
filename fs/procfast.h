/* What every part of the FUSE face shares: the source procfs and the mount's
 * settings, plus the small helpers each operation uses. */
#ifndef PROCFAST_H
#define PROCFAST_H

#include <errno.h>
#include <limits.h>
#include <sys/stat.h>

#include <fuse_lowlevel.h>

#include "cache/node.h"
#include "fs/caller.h"

struct procfast {
	const char *source;  /* path of the procfs we mirror */
	int srcfd;           /* its root, O_PATH */
	int indexfd;         /* the same, without hidepid=: what the index scans */
	int same_pid_ns;     /* the source's pids are the daemon's own */
	int selfproc;        /* the daemon's own /proc, for facts about callers */
	int read_only;
	int no_dedup;        /* -o nodedup: the kernel's layout for thread fd/ */
	int hide_level;      /* hidepid: 0 off, 1 noaccess, 2 invisible, 4 ptraceable */
	double entry_timeout; /* kernel cache lifetimes, for what may be cached */
	double attr_timeout;
};

extern struct procfast pf;

const struct fuse_lowlevel_ops *procfast_ops(void);

/* Source path of a child: "PID" under the root, "PID/fd" below. ENAMETOOLONG
 * when it does not fit PATH_MAX, as the kernel would say. */
int child_path(const struct node *parent, const char *name, char *buf, size_t len);

/* 0 while the node's process is still the one it was made for, -ESRCH (or
 * -ENOENT in task/) once it is gone, another errno when that cannot be told
 * (out of file descriptors). */
int node_alive(const struct node *n);

static inline int node_gone(const struct node *n)
{
	int r = node_alive(n);

	return r == -ESRCH || r == -ENOENT;
}

/* The errno for an operation a path walk makes (lookup in n, open, readlink,
 * access) that returned r on n: ESTALE when the kernel may have walked a name
 * of a gone process, which is dropped then, so that it walks again. */
int node_walk_error(struct node *n, int r);

/* The errno for an operation on n that returned r: if n's process is gone,
 * that explains it best (procfs answers ESRCH/ENOENT), else r. */
static inline int node_error(const struct node *n, int r)
{
	int dead = node_alive(n);

	return dead ? dead : r;
}

/* Attributes of a node as the source shows them to the current credentials. */
int node_stat(struct node *n, struct stat *st);

/* Hidden lookup: dir holds a link whose text is name ("socket:[N]");
 * fills the target's attributes and the path of that link. */
int link_target_find(const struct node *dir, const char *name, char *path, size_t len,
		     struct stat *st);

/* Attributes of a link target as the kernel may accept them (see link.c). */
int link_target_stat(const struct node *n, struct stat *st);
void link_target_fixup(struct stat *st);

/* Thread fd/, fdinfo/ and task/ as links (dedup.c). dedup_child says
 * whether dir/name is served as a link; for "task" it sets *tgid. */
int dedup_child(const struct node *dir, const char *name, pid_t *tgid);
int dedup_link_text(const struct node *n, char *buf, size_t len);
void dedup_link_attr(const char *name, pid_t tgid, struct stat *st);

int node_is_thread_dir(const struct node *dir, pid_t *tgid, pid_t *tid);

/* Threads' fixed-name directories listed from templates (thread_dir.c). */
void thread_dir_init(int same_pid_ns);
void thread_dir_destroy(void);
int thread_dir_listed(const struct node *dir);
ssize_t thread_dir_fill(fuse_req_t req, const struct node *dir, char *out, size_t size, off_t off);

struct dedup_listing {
	int files_link; /* fd and fdinfo listed as links */
	int net_link;   /* net listed as a link */
	int task_link;  /* task listed as a link */
};
void dedup_listing_init(const struct node *dir, struct dedup_listing *dl);
unsigned char dedup_dtype(const struct dedup_listing *dl, const char *name, unsigned char type);

/* The root listing from the TGID index (root_dir.c). */
int root_dir_init(void);
void root_dir_destroy(void);
size_t root_dir_fill(fuse_req_t req, char *out, size_t size, off_t off);

struct proc_event_hooks;
/* Event hooks that drop stale kernel cache entries (invalidate.c). */
void invalidate_init(struct fuse_session *se, struct proc_event_hooks *hooks);
/* Drops the kernel's name of the process dir n unless that was done before:
 * 0 when this call dropped it. */
int invalidate_process_name(struct node *n);

/* The source fd behind an open directory handle. */
int dir_handle_fd(const struct fuse_file_info *fi);

/* fuse_reply_err with the kernel's convention of positive errno. */
static inline void reply_err(fuse_req_t req, int negerr)
{
	fuse_reply_err(req, negerr < 0 ? -negerr : negerr);
}

#endif
