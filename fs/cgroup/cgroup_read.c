#include "fs/cgroup/cgroup_read.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs/lib/cleanup.h"
#include "fs/lib/lines.h"

ssize_t cg_read(const struct cg_path *p, const char *file, char *buf, size_t size)
{
	char path[sizeof(p->rel) + 64];
	__do_close int fd = -1;
	size_t len = 0;
	ssize_t got;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", p->rel, file) >= sizeof(path))
		return -ENAMETOOLONG;
	if ((fd = openat(p->dirfd, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) < 0)
		return -errno;
	while (len + 1 < size && (got = read(fd, buf + len, size - 1 - len)) > 0)
		len += (size_t)got;
	if (len + 1 < size && got < 0)
		return -errno;
	buf[len] = '\0';
	return (ssize_t)len;
}

static int parse_u64(const char *s, uint64_t *v)
{
	char *end;

	if (!strncmp(s, "max", 3)) {
		*v = CG_UNLIMITED;
		return 0;
	}
	errno = 0;
	*v = strtoull(s, &end, 10);
	/* v1 writes "no limit" as the largest page-aligned long */
	if (*v >= 1ULL << 62)
		*v = CG_UNLIMITED;
	return end == s || errno ? -EINVAL : 0;
}

int cg_read_u64(const struct cg_path *p, const char *file, uint64_t *v)
{
	char buf[64];
	ssize_t r = cg_read(p, file, buf, sizeof(buf));

	return r < 0 ? (int)r : parse_u64(buf, v);
}

int cg_key_u64(const char *text, const char *key, uint64_t *v)
{
	size_t n = strlen(key);

	for (const char *l = *text ? text : NULL; l; l = line_next(l))
		if (!strncmp(l, key, n) && l[n] == ' ')
			return parse_u64(l + n + 1, v);
	return -ENOENT;
}

void cg_keys_u64(const char *text, const struct cg_key *keys, size_t n)
{
	for (const char *l = *text ? text : NULL; l; l = line_next(l)) {
		size_t len = strcspn(l, " \n");

		for (size_t i = 0; i < n; i++)
			if (keys[i].name && keys[i].name[0] == l[0] && !strncmp(l, keys[i].name, len) &&
			    !keys[i].name[len] && l[len] == ' ') {
				parse_u64(l + len + 1, keys[i].value);
				break;
			}
	}
}

int cg_min_up(const struct cg_path *p, const char *file, uint64_t *v)
{
	struct cg_path up = *p;
	uint64_t here = 0;
	int r = cg_read_u64(&up, file, v);

	if (r)
		return r;
	/* Ancestors the caller may not read bind it all the same: the daemon's
	 * own look would tell more than the caller may know, so they are read
	 * as the caller too, and skipped when refused. */
	while (!cgroup_parent(&up))
		if (!cg_read_u64(&up, file, &here) && here && here < *v)
			*v = here;
	return 0;
}
