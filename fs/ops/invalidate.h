/* Event hooks that drop stale kernel cache entries (invalidate.c). */
#ifndef PROCFAST_INVALIDATE_H
#define PROCFAST_INVALIDATE_H

#include <fuse_lowlevel.h>

#include "cache/node.h"

struct proc_event_hooks;
void invalidate_init(struct fuse_session *se, struct proc_event_hooks *hooks);

/* Drops the kernel's name of the process dir n unless that was done before:
 * 0 when this call dropped it. */
int invalidate_process_name(struct node *n);

/* Makes the kernel hold n's size as at least size (a regular file; see
 * file_size.c): 0 or -errno. */
int invalidate_raise_size(const struct node *n, off_t size);

#endif
