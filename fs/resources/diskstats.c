/* diskstats: the host's devices the cgroup did I/O on, with its own
 * counts (LXCFS proc_diskstats_read): reads, merges, sectors and times
 * from blkio (v1) or io.stat (v2, which keeps no merges or times); I/Os
 * in progress and weighted time 0; devices it never touched left out.
 * Fourteen fields, as LXCFS and kernels before 4.18 give them. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "fs/cgroup/cgroup_io.h"
#include "fs/resources/render.h"

static int touched(const struct cg_io_dev *d)
{
	return d->reads || d->writes || d->read_merged || d->write_merged || d->read_sectors ||
	       d->write_sectors || d->read_ms || d->write_ms;
}

int res_diskstats(const struct res_target *t, const struct cg_set *cg, const char *src, FILE *out)
{
	struct cg_io *io = cg_io_read(cg);
	struct cg_io_dev d;
	unsigned major, minor;
	char name[72];

	(void)t;
	if (!io)
		return -errno;
	for (const char *l = src; l; l = line_next(l)) {
		if (sscanf(l, "%u %u %71s", &major, &minor, name) != 3)
			continue;
		cg_io_dev(io, major, minor, &d);
		if (!touched(&d))
			continue;
		fprintf(out, "%4u %7u %s %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64
			     " %" PRIu64 " %" PRIu64 " %" PRIu64 " 0 %" PRIu64 " 0\n",
			major, minor, name, d.reads, d.read_merged, d.read_sectors, d.read_ms, d.writes,
			d.write_merged, d.write_sectors, d.write_ms, d.io_ms);
	}
	cg_io_free(io);
	return 1;
}
