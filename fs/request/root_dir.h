/* The root listing from the TGID index (root_dir.c). */
#ifndef PROCFAST_ROOT_DIR_H
#define PROCFAST_ROOT_DIR_H

#include <stdint.h>

#include <fuse_lowlevel.h>

struct dir_reply;
void root_dir_fill(struct dir_reply *r, off_t off);

#endif
