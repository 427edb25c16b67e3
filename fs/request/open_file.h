/* An open file of the source, as its opener opened it (open_file.c): what
 * a handle of a file names (handle.h), read and written by file.c. */
#ifndef PROCFAST_OPEN_FILE_H
#define PROCFAST_OPEN_FILE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

#include "fs/caller/fair.h"
#include "fs/caller/ns_helper.h"
#include "fs/entries/content.h"
#include "fs/request/handle.h"
#include "fs/request/poll_watch.h"
#include "fs/request/request.h"

/* Flags the source open may honour; creation is refused separately. */
#define PASSED_OPEN_FLAGS (O_ACCMODE | O_APPEND | O_TRUNC | O_NONBLOCK | O_DSYNC | O_SYNC | O_NOATIME)
/* What a helper's open for each read or write keeps of them. */
#define REOPEN_FLAGS (O_NONBLOCK | O_DSYNC | O_SYNC | O_NOATIME)

struct open_file {
	struct handle_head head;  /* the source file, or -1 with a helper: first, for handle_fd */
	int via_helper;           /* served by a helper process: */
	struct ns_helper *helper; /* it opens, reads and writes in the opener's namespaces
				   * (NULL once none could be had: EPERM) */
	int flags;                /* the source open's flags */
	pthread_mutex_t lock;     /* readers of one handle, over made_text */
	char *made_text;          /* the text made for its reader: its own state
				   * (content.h) */
	size_t made_len;
	const struct content_ops *content; /* its row's, where its opener's reads are made */
	struct content_state content_state; /* what the open decided for them */
	struct fair_hold share;   /* counted in its opener's shares (fair.h) */
	int snapshot_id;          /* the backing file the kernel reads (snapshot.h), or 0 */
	struct poll_watch_ref poll_watch; /* its pollers' (poll_watch.h) */
	atomic_int poll_fd;       /* with a helper: the daemon's open, polled (poll.c), or -1 */
	struct fair_hold poll_share; /* poll_fd's, counted in its opener's shares too */
};

/* A source open of the request's node as the caller, for the kernel's open
 * flags: 0 and *made, or -errno. */
int open_file_make(struct request *rq, int flags, struct open_file **made);

/* The open file a handle names. One the kernel kept from an earlier server
 * (on a fixed node: handle.c) is opened again, as its reader, at its first
 * use here, so that a reader holding meminfo open (top) reads on across a
 * restart. */
struct open_file *open_file_of(struct request *rq, const struct fuse_file_info *fi, int *err);

/* Closes of, open on n. */
void open_file_close(struct node *n, struct open_file *of);

#endif
