/* The operation table: every FUSE operation procfast serves, and the
 * settings negotiated at INIT. */
#ifndef PROCFAST_OPS_H
#define PROCFAST_OPS_H

#include <fuse_lowlevel.h>

/* The table. Who is told that INIT was answered: the transport, once the
 * reply is written (transport_attach). */
const struct fuse_lowlevel_ops *procfast_ops(void);

#endif
