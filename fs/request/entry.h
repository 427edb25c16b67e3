/* Names and attributes (entry.c): the lookups, a node's attributes, and
 * the nodes a server makes without a lookup (fixed ids, handed-over records). */
#ifndef PROCFAST_ENTRY_H
#define PROCFAST_ENTRY_H

#include <fuse_lowlevel.h>

#include <stddef.h>
#include <sys/stat.h>

#include "cache/nodes/node.h"

struct fuse_entry_param;
struct name_class;

/* The entry a LOOKUP of name (of class cls) in p answers, counted as one
 * lookup of its node: 0, or the errno. Made for no caller thread: a link
 * text's target (link.c) as for a caller outside the pid namespace. */
int entry_lookup(struct node *p, const struct name_class *cls, const char *name,
		 struct fuse_entry_param *e);

/* The node of a fixed id (cache/nodes/node.h) the kernel had from an earlier
 * server, made as a lookup of its name at the root makes it, or NULL. */
struct node *entry_resolve_fixed(uint64_t id);

/* A node of the server before, handed over (cache/nodes/node_record.h): its class
 * in parent, decided as a lookup decides it, and its pid as this server's
 * namespace names it. */
const struct name_class *entry_complete_record(const struct node *parent, const char *name,
					       struct node_owner *owner);

/* Operations of the table (ops.c). */
void pf_lookup(fuse_req_t req, fuse_ino_t parent, const char *name);
void pf_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup);
void pf_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets);
void pf_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void pf_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		struct fuse_file_info *fi);
void pf_access(fuse_req_t req, fuse_ino_t ino, int mask);
void pf_statfs(fuse_req_t req, fuse_ino_t ino);
void pf_readlink(fuse_req_t req, fuse_ino_t ino);

#endif
