/* The names beside the pids at the root (meminfo, sys, self, ...): read
 * once from the source at start, in its order and with its offsets, and
 * numbered with fixed node ids (cache/nodes/node.h), the same in every
 * server of one procfs, so that the kernel's ids for them outlive a server.
 */
#ifndef PROCFAST_ROOT_NAMES_H
#define PROCFAST_ROOT_NAMES_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The offset of pid 0 in the root listing (fs/proc/base.c:
 * FIRST_PROCESS_ENTRY + 2). */
#define ROOT_NAMES_TGID_OFFSET 258

struct root_name {
	char name[256];
	unsigned char type;
	ino_t ino;
	off_t pos;   /* offset at which this entry is read */
	off_t next;  /* offset of the entry after it */
};

/* Reads them from the source. 0, or -errno. */
int root_names_init(void);
void root_names_destroy(void);

/* All of them, in the source's order. */
const struct root_name *root_names(size_t *count);

/* The fixed node id of a name beside the pids, 0 for any other name; and
 * the name of a fixed id, or NULL. */
uint64_t root_names_fixed_id(const char *name);
const char *root_names_fixed_name(uint64_t id);

#endif
