/* The root listing from the TGID index (root_dir.c). */
#ifndef PROCFAST_ROOT_DIR_H
#define PROCFAST_ROOT_DIR_H

#include <stdint.h>

#include <fuse_lowlevel.h>

int root_dir_init(void);
void root_dir_destroy(void);
struct dir_reply;
void root_dir_fill(struct dir_reply *r, off_t off);

/* The fixed node id of a name beside the pids (cache/nodes/node.h: the same in every
 * server), 0 for any other name; and the name of a fixed id, or NULL. */
uint64_t root_dir_fixed_id(const char *name);
const char *root_dir_fixed_name(uint64_t id);

#endif
