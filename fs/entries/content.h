/* A row's content operations (name_class.h): what a read gives in place of
 * the source's bytes, a text made for the reader from the source's whole
 * text. A row without any is mirrored: the source's bytes, read afresh at
 * each read. The request path (fs/request/file.c) calls these and nothing
 * else: a new kind of content is one struct here and its rows. */
#ifndef PROCFAST_CONTENT_H
#define PROCFAST_CONTENT_H

#include <stddef.h>
#include <sys/types.h>

#include "cache/nodes/node.h"
#include "fs/resources/res_target.h"

/* What an open decided for its reads. */
struct content_state {
	struct res_target res; /* resource_content: whose cgroup's numbers */
};

struct content_ops {
	const char *name;
	/* The source's whole text usually fits one read of this many bytes. */
	size_t first_read;
	/* Made at the first read at whatever offset (its length differs from
	 * the source's text), else at each read from offset 0. */
	int any_offset;
	/* make() reads what only the caller may (a cgroup's files): the worker
	 * acts as the caller around it, even for a file a helper reads. */
	int as_caller;
	/* At open, for the opener (its pid in the daemon's namespace): whether
	 * its reads are made here at all, with *st filled. */
	int (*opened)(const struct node *n, pid_t opener, struct content_state *st);
	/* At a read from the start by the thread reader_tid: whether it gets a
	 * made text (else the source's bytes). */
	int (*applies)(const struct node *n, const struct content_state *st, pid_t reader_tid);
	/* The reader's text from the source's whole text src (len bytes,
	 * NUL-terminated, malloc'd): 1 with *text (src itself, or a new malloc'd
	 * text) and *text_len; 0: the source's text stands; or -errno. */
	int (*make)(const struct node *n, const struct content_state *st, char *src, size_t len,
		    char **text, size_t *text_len);
};

/* A task reading its own stat, status or wchan (self_state.c); the row's
 * content_arg is its enum self_state. */
extern const struct content_ops self_state_content;

/* A container's meminfo, cpuinfo, stat, ... made from its cgroup's numbers
 * when the mount serves resources (resource_content.c); the row's
 * content_arg is its enum res_file. */
extern const struct content_ops resource_content;

#endif
