/* Open files (file.c). */
#ifndef PROCFAST_FILE_H
#define PROCFAST_FILE_H

#include <fuse_lowlevel.h>

/* The source fd behind an open file handle, or -1 when a helper process
 * serves it (ns_helper.h). */
int open_file_fd(const struct fuse_file_info *fi);

#endif
