/* Hidden link targets (link.c): the kernel asks for "socket:[N]" in the
 * directory of a link with that text. */
#ifndef PROCFAST_LINK_H
#define PROCFAST_LINK_H

#include <fuse_lowlevel.h>

#include <stddef.h>
#include <sys/stat.h>

#include "cache/nodes/node.h"

/* dir holds the link whose text, name ("socket:[N]"), the caller tid just
 * read (the kernel follows it): fills the target's attributes and the path
 * of that link. ENOENT when tid's last readlink was not that. */
int link_target_find(const struct node *dir, pid_t tid, const char *name, char *path,
		     size_t len, struct stat *st);

/* Attributes of a link target as the kernel may accept them. */
int link_target_stat(const struct node *n, struct stat *st);
void link_target_fixup(struct stat *st);

/* Operations of the table (ops.c). */
void pf_readlink(fuse_req_t req, fuse_ino_t ino);

#endif
