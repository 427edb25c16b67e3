/* What lookup and getattr (entry.c) tell the other operations about a node:
 * whether its process is still the one it was made for, and its attributes. */
#ifndef PROCFAST_ENTRY_H
#define PROCFAST_ENTRY_H

#include <errno.h>
#include <stddef.h>
#include <sys/stat.h>

#include "cache/nodes/node.h"

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

struct fuse_entry_param;
struct name_class;

/* The entry a LOOKUP of name (of class cls) in p answers, counted as one
 * lookup of its node: 0, or the errno. Made for no caller thread: a link
 * text's target (link.c) as for a caller outside the pid namespace. */
int entry_lookup(struct node *p, const struct name_class *cls, const char *name,
		 struct fuse_entry_param *e);

/* Attributes of a node as the source shows them to the current credentials. */
int node_stat(struct node *n, struct stat *st);

/* The node of a fixed id (cache/nodes/node.h) the kernel had from an earlier
 * server, made as a lookup of its name at the root makes it, or NULL. */
struct node *entry_resolve_fixed(uint64_t id);

/* A node of the server before, handed over (cache/nodes/node_record.h): its class
 * in parent, decided as a lookup decides it, and its pid as this server's
 * namespace names it. */
const struct name_class *entry_complete_record(const struct node *parent, const char *name,
					       struct node_owner *owner);

#endif
