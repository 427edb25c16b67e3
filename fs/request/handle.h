/* The handles the kernel holds (handle.c): the token it is given as fi->fh
 * names an open file or directory of this server. */
#ifndef PROCFAST_HANDLE_H
#define PROCFAST_HANDLE_H

#include <stdint.h>

struct node;

/* Every object a token names (dir.c's dir_handle, file.c's open_file)
 * begins with this: what fstat() on the handle asks about. */
struct handle_head {
	int fd; /* the source file or directory, or -1 (a helper serves it) */
};

/* A new token for obj, open on node n; 0 when memory is short. */
uint64_t handle_give(void *obj, const struct node *n);

/* What token names here, or NULL: a token of an earlier server on the same
 * connection (fs/supervisor/supervisor.c), which only a fixed node can carry. */
void *handle_find(uint64_t token);

/* The source fd of what token names, or -1. */
int handle_fd(uint64_t token);

/* Makes token, an earlier server's, name obj here. Returns what it names
 * now: obj, or what a concurrent request adopted first (the caller then
 * frees obj); NULL when memory is short. */
void *handle_adopt(uint64_t token, void *obj, const struct node *n);

/* Calls fn for the node of every handle, in an RCU read-side section (the
 * kernel holds each node while its handle is open). */
void handle_for_each_node(void (*fn)(const struct node *n, void *arg), void *arg);

/* Forgets token; returns what it named, or NULL. */
void *handle_drop(uint64_t token);

#endif
