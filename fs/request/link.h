/* Hidden link targets (link.c): the kernel asks for "socket:[N]" in the
 * directory of a link with that text. */
#ifndef PROCFAST_LINK_H
#define PROCFAST_LINK_H


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

/* The text of n, a mirrored link, read as the acting caller tid. */
int link_mirror_text(const struct node *n, pid_t tid, char *buf, size_t len);

/* /proc/self names the caller's thread group, /proc/thread-self its thread;
 * a caller outside the mount's pid namespace has neither (ENOENT). */
struct caller;
int link_caller_text(const struct node *n, const struct caller *c, char *buf, size_t len);

#endif
