/* Whether a node's process is still the one it was made for, and the
 * errno an operation answers when it is not (node_life.c). */
#ifndef PROCFAST_NODE_LIFE_H
#define PROCFAST_NODE_LIFE_H

#include <errno.h>
#include <stddef.h>

#include "cache/nodes/node.h"

/* Source path of a child: "PID" under the root, "PID/fd" below. ENAMETOOLONG
 * when it does not fit PATH_MAX, as the kernel would say. */
int child_path(const struct node *parent, const char *name, char *buf, size_t len);

/* 0 while the node's process is still the one it was made for, -ESRCH (or
 * -ENOENT in task/) once it is gone, another errno when that cannot be told
 * (out of file descriptors). */
int node_alive(const struct node *n);

/* The errno of a name asked in dir, given alive = node_alive(dir) (not 0):
 * procfs's walk through some of a task's directories asks first whether
 * the task lives, ESRCH (NC_WALK_ASKS_TASK); in the others the lookup finds
 * no task, ENOENT. */
int node_lookup_gone(const struct node *dir, int alive);

static inline int node_gone(const struct node *n)
{
	int r = node_alive(n);

	return r == -ESRCH || r == -ENOENT;
}

/* The errno for an operation a path walk makes (lookup in n, open, readlink,
 * access, the getattr that checks a cached owner) that returned r on n:
 * ESTALE when the kernel may have walked a name of a gone process, which is
 * dropped then, so that it walks again. */
int node_walk_error(struct node *n, int r);

/* The errno for an operation on n that returned r: if n's process is gone,
 * that explains it best (procfs answers ESRCH/ENOENT), else r. */
static inline int node_error(const struct node *n, int r)
{
	int dead = node_alive(n);

	return dead ? dead : r;
}

#endif
