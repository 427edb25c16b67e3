/* v1 (blkio) keeps one file per quantity, lines "MAJ:MIN Read N"; the
 * throttle files count every I/O, the others only under CFQ/BFQ (missing
 * elsewhere: zeros). v2 keeps io.stat, lines "MAJ:MIN rbytes=N wbytes=N
 * rios=N wios=N ...", without merges or times. */
#include "fs/cgroup/cgroup_io.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs/cgroup/cgroup_fs.h"
#include "fs/cgroup/cgroup_read.h"
#include "fs/lib/lines.h"

enum { IO_SERVICED, IO_BYTES, IO_MERGED, IO_WAIT, IO_SVCTIME, IO_FILES };

#define IO_TEXT 16384

struct cg_io {
	int v2;
	char text[IO_FILES][IO_TEXT];
};

/* v1 files, each with the name tried when the first is missing */
static const char *const v1_files[IO_FILES][2] = {
	{ "blkio.throttle.io_serviced_recursive", "blkio.io_serviced_recursive" },
	{ "blkio.throttle.io_service_bytes_recursive", "blkio.io_service_bytes_recursive" },
	{ "blkio.io_merged_recursive", NULL },
	{ "blkio.io_wait_time_recursive", NULL },
	{ "blkio.io_service_time_recursive", NULL },
};

static void read_v1(const struct cg_path *p, struct cg_io *io)
{
	for (int i = 0; i < IO_FILES; i++)
		for (int alt = 0; alt < 2 && v1_files[i][alt]; alt++)
			if (cg_read(p, v1_files[i][alt], io->text[i], IO_TEXT) >= 0)
				break;
}

struct cg_io *cg_io_read(const struct cg_set *set)
{
	struct cg_path p;
	struct cg_io *io;
	int r;

	if ((r = cgroup_in(set, CG_BLKIO, &p))) {
		errno = -r;
		return NULL;
	}
	if (!(io = calloc(1, sizeof(*io))))
		return NULL;
	io->v2 = p.v2;
	if (!p.v2)
		read_v1(&p, io);
	else if ((r = (int)cg_read(&p, "io.stat", io->text[0], IO_TEXT)) < 0) {
		free(io);
		errno = -r;
		return NULL;
	}
	return io;
}

void cg_io_free(struct cg_io *io)
{
	free(io);
}

/* The line of text for major:minor, or NULL. */
static const char *dev_line(const char *text, unsigned major, unsigned minor, const char *op)
{
	char key[64];
	size_t n = (size_t)snprintf(key, sizeof(key), "%u:%u %s", major, minor, op ? op : "");

	for (const char *l = *text ? text : NULL; l; l = line_next(l))
		if (!strncmp(l, key, n))
			return l + n;
	return NULL;
}

static uint64_t v1_value(const char *text, unsigned major, unsigned minor, const char *op)
{
	const char *l = dev_line(text, major, minor, op);

	return l ? strtoull(l, NULL, 10) : 0;
}

static uint64_t v2_value(const char *line, const char *key)
{
	const char *eol = strchr(line, '\n'), *k = strstr(line, key);

	return k && (!eol || k < eol) ? strtoull(k + strlen(key), NULL, 10) : 0;
}

void cg_io_dev(const struct cg_io *io, unsigned major, unsigned minor, struct cg_io_dev *d)
{
	const char(*t)[IO_TEXT] = io->text;

	memset(d, 0, sizeof(*d));
	if (io->v2) {
		const char *l = dev_line(t[0], major, minor, NULL);

		if (!l)
			return;
		d->reads = v2_value(l, "rios=");
		d->writes = v2_value(l, "wios=");
		d->read_sectors = v2_value(l, "rbytes=") / 512;
		d->write_sectors = v2_value(l, "wbytes=") / 512;
		return;
	}
	d->reads = v1_value(t[IO_SERVICED], major, minor, "Read");
	d->writes = v1_value(t[IO_SERVICED], major, minor, "Write");
	d->read_merged = v1_value(t[IO_MERGED], major, minor, "Read");
	d->write_merged = v1_value(t[IO_MERGED], major, minor, "Write");
	d->read_sectors = v1_value(t[IO_BYTES], major, minor, "Read") / 512;
	d->write_sectors = v1_value(t[IO_BYTES], major, minor, "Write") / 512;
	/* nanoseconds there, milliseconds here (each rounded down, as LXCFS) */
	d->read_ms = v1_value(t[IO_SVCTIME], major, minor, "Read") / 1000000 +
		     v1_value(t[IO_WAIT], major, minor, "Read") / 1000000;
	d->write_ms = v1_value(t[IO_SVCTIME], major, minor, "Write") / 1000000 +
		      v1_value(t[IO_WAIT], major, minor, "Write") / 1000000;
	d->io_ms = v1_value(t[IO_SVCTIME], major, minor, "Total") / 1000000;
}
