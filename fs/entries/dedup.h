/* Thread fd/, fdinfo/, net/ and task/ as links (dedup.c). */
#ifndef PROCFAST_DEDUP_H
#define PROCFAST_DEDUP_H

#include <sys/stat.h>
#include <sys/types.h>

#include "cache/nodes/node.h"

struct name_class;

/* Whether the child of dir of class cls is served as a link; for a
 * thread's task/ it sets *tgid. */
int dedup_child(const struct node *dir, const struct name_class *cls, pid_t *tgid);
int dedup_link_text(const struct node *n, char *buf, size_t len);
void dedup_link_attr(const struct name_class *cls, const char *name, pid_t tgid, struct stat *st);

/* "P/task/T": sets P and T (either may be NULL). */
int node_is_thread_dir(const struct node *dir, pid_t *tgid, pid_t *tid);

struct dedup_listing {
	const struct name_class *dir;
	int files_link; /* fd and fdinfo listed as links */
	int net_link;   /* net listed as a link */
	int task_link;  /* task listed as a link */
};
void dedup_listing_init(const struct node *dir, struct dedup_listing *dl);
unsigned char dedup_dtype(const struct dedup_listing *dl, const char *name, unsigned char type);

#endif
