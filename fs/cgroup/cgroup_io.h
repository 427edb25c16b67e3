/* A cgroup's block I/O per device, as diskstats counts it. */
#ifndef PROCFAST_CGROUP_IO_H
#define PROCFAST_CGROUP_IO_H

#include <stdint.h>
#include <sys/types.h>

#include "fs/cgroup/cgroup_fs.h"

struct cg_io_dev {
	uint64_t reads, read_merged, read_sectors, read_ms;
	uint64_t writes, write_merged, write_sectors, write_ms;
	uint64_t io_ms;
};

struct cg_io; /* the texts read, held for lookups by device */

/* Reads the block I/O statistics. NULL with errno set on failure
 * (ENOENT: no blkio/io controller). */
struct cg_io *cg_io_read(const struct cg_set *set);
void cg_io_free(struct cg_io *io);

/* Device major:minor's numbers (zeros where none are kept). */
void cg_io_dev(const struct cg_io *io, unsigned major, unsigned minor, struct cg_io_dev *d);

#endif
