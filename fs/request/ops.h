/* The operation table: every FUSE operation procfast serves, and the
 * settings negotiated at INIT. */
#ifndef PROCFAST_OPS_H
#define PROCFAST_OPS_H

#include <fuse_lowlevel.h>

/* The table; connected is called once INIT is answered. */
const struct fuse_lowlevel_ops *procfast_ops(void (*connected)(void));

#endif
