/* What each kind of node does for the operations on it (node.h's enum
 * node_kind, decided at lookup from the row of its name: name_class.h), as
 * a table of entry operations: getattr and readlink read it, and never ask
 * which kind a node is. A new kind is one struct in entry_kinds.c. */
#ifndef PROCFAST_ENTRY_KINDS_H
#define PROCFAST_ENTRY_KINDS_H

#include <stddef.h>
#include <sys/stat.h>

#include "cache/nodes/node.h"
#include "fs/request/request.h"

struct entry_ops {
	const char *name;
	/* Its attributes, as the source shows them to the acting caller. */
	int (*stat)(struct node *n, struct stat *st);
	/* Its link text for the request's caller (NUL-terminated in buf), or
	 * NULL: not a link (EINVAL). 0, or -errno. */
	int (*readlink)(struct request *rq, char *buf, size_t len);
};

/* The operations of n's kind. */
const struct entry_ops *entry_ops_of(const struct node *n);

#endif
