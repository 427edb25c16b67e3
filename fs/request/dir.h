/* Open directory handles (dir.c). */
#ifndef PROCFAST_DIR_H
#define PROCFAST_DIR_H

#include <fuse_lowlevel.h>

/* The source fd behind an open directory handle. */
int dir_handle_fd(const struct fuse_file_info *fi);

#endif
