/* Event hooks that drop stale kernel cache entries (invalidate.c). */
#ifndef PROCFAST_INVALIDATE_H
#define PROCFAST_INVALIDATE_H

#include <fuse_lowlevel.h>

#include "cache/nodes/node.h"

struct proc_event_hooks;
void invalidate_init(struct fuse_session *se, struct proc_event_hooks *hooks);

/* From a request that found the process of dir n gone: drops the kernel's
 * name of it, unless done before (-EALREADY); 0 when this call dropped it, or
 * left it to the exit event where the request may not wait
 * (invalidate_set_wait_guard). */
int invalidate_found_gone(struct node *n);

/* Who may wait for the kernel's directory locks while serving a request:
 * begin says whether the calling thread may (then end follows), from the
 * transport (transport.h). Without a guard, every thread may. */
void invalidate_set_wait_guard(int (*begin)(void), void (*end)(void));

/* Stores one zero byte of n at offset at in the kernel's cache, which grows
 * the size it holds (fs/request/file_size.c): 0 or -errno. */
int invalidate_store_byte(const struct node *n, off_t at);

#endif
