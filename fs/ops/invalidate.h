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

/* Stores one zero byte of n at offset at in the kernel's cache, which grows
 * the size it holds (fs/ops/file_size.c): 0 or -errno. */
int invalidate_store_byte(const struct node *n, off_t at);

#endif
