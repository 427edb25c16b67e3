/* The root listing from the TGID index (root_dir.c). */
#ifndef PROCFAST_ROOT_DIR_H
#define PROCFAST_ROOT_DIR_H

#include <fuse_lowlevel.h>

int root_dir_init(void);
void root_dir_destroy(void);
size_t root_dir_fill(fuse_req_t req, char *out, size_t size, off_t off);

#endif
