/* ESTALE for node ids of an earlier daemon on the same connection. */
#ifndef PROCFAST_STALE_H
#define PROCFAST_STALE_H

#include <fuse_lowlevel.h>

/* Points every operation that takes a node id at a check of that id. */
void stale_guard_ops(struct fuse_lowlevel_ops *ops);

#endif
