/* The handed-over mounts across an upgrade: the supervisor writes them to a
 * memfd before it executes the new binary, which reads them back. Each slot
 * is: session fd, pidns= fd, ready, mount point, argc, then the arguments,
 * each NUL-terminated; the fds stay open across the execve. The slots' ring
 * buffers and fusectl numbers (mount_slot.h) are named apart, in the
 * environment, so that a procfast of either side of those changes reads the
 * table of the other. */
#include "fs/supervisor/mount_slot.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fs/lib/cleanup.h"
#include "fs/supervisor/exec_env.h"

static int write_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = write(fd, buf, len);

		if (n < 0)
			return -errno;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

int slot_table_write(int mfd, const struct mount_slot *s)
{
	char head[64];
	int argc = 0, r;

	while (s->join.argv[argc])
		argc++;
	r = snprintf(head, sizeof(head), "%d%c%d%c%d%c", s->fd, 0, s->join.nsfd, 0, s->ready, 0);
	if ((r = write_all(mfd, head, (size_t)r)) ||
	    (r = write_all(mfd, s->join.mountpoint, strlen(s->join.mountpoint) + 1)))
		return r;
	r = snprintf(head, sizeof(head), "%d%c", argc, 0);
	if ((r = write_all(mfd, head, (size_t)r)))
		return r;
	for (int i = 0; i < argc; i++)
		if ((r = write_all(mfd, s->join.argv[i], strlen(s->join.argv[i]) + 1)))
			return r;
	return 0;
}

/* A number of each slot, in their order, as the environment's name: "3 -1 7". */
static int save_list(const char *name, struct mount_slot **slots, size_t n,
		     long (*of)(const struct mount_slot *))
{
	__do_free char *list = malloc(n * 12 + 1);
	size_t at = 0;

	if (!list)
		return -ENOMEM;
	list[0] = 0;
	for (size_t i = 0; i < n; i++)
		at += (size_t)sprintf(list + at, "%s%ld", i ? " " : "", of(slots[i]));
	return setenv(name, list, 1) ? -errno : 0;
}

static long rings_of(const struct mount_slot *s)
{
	return s->rings_fd;
}

static long nodes_of(const struct mount_slot *s)
{
	return s->nodes_fd;
}

static long conn_of(const struct mount_slot *s)
{
	return s->conn;
}

/* The slots' ring buffer and node record fds (-1 for none) and fusectl
 * numbers: apart from the table, which keeps the format of a procfast
 * before them. */
static int save_rings_and_conns(struct mount_slot **slots, size_t n)
{
	int r;

	for (size_t i = 0; i < n; i++)
		if ((slots[i]->rings_fd >= 0 && fcntl(slots[i]->rings_fd, F_SETFD, 0)) ||
		    (slots[i]->nodes_fd >= 0 && fcntl(slots[i]->nodes_fd, F_SETFD, 0)))
			return -errno;
	if ((r = save_list(JOINED_RINGS_ENV, slots, n, rings_of)) ||
	    (r = save_list(JOINED_NODES_ENV, slots, n, nodes_of)))
		return r;
	return save_list(JOINED_CONNS_ENV, slots, n, conn_of);
}

int mount_slots_save(struct mount_slot **slots, size_t n)
{
	__do_close int mfd = memfd_create("procfast-slots", 0);
	int r;

	if (mfd < 0)
		return -errno;
	for (size_t i = 0; i < n; i++) {
		struct mount_slot *s = slots[i];

		if ((r = slot_table_write(mfd, s)))
			return r;
		if (fcntl(s->fd, F_SETFD, 0) || (s->join.nsfd >= 0 && fcntl(s->join.nsfd, F_SETFD, 0)))
			return -errno;
	}
	if (lseek(mfd, 0, SEEK_SET))
		return -errno;
	if ((r = save_rings_and_conns(slots, n)))
		return r;
	return move_fd(&mfd);
}

void mount_slot_keep_fds(struct mount_slot *s)
{
	fcntl(s->fd, F_SETFD, FD_CLOEXEC);
	if (s->join.nsfd >= 0)
		fcntl(s->join.nsfd, F_SETFD, FD_CLOEXEC);
	if (s->rings_fd >= 0)
		fcntl(s->rings_fd, F_SETFD, FD_CLOEXEC);
	if (s->nodes_fd >= 0)
		fcntl(s->nodes_fd, F_SETFD, FD_CLOEXEC);
}

/* The next NUL-terminated field of [*p, end), or NULL. */
static char *field(char **p, char *end)
{
	char *f = *p, *nul = memchr(f, '\0', (size_t)(end - f));

	if (!nul)
		return NULL;
	*p = nul + 1;
	return f;
}

static int number(char **p, char *end, int *v)
{
	char *f = field(p, end), *e;
	long n;

	if (!f)
		return -EINVAL;
	n = strtol(f, &e, 10);
	if (*e || n < -1 || n > INT_MAX)
		return -EINVAL;
	*v = (int)n;
	return 0;
}

/* One slot from [*p, end): strings copied into the slot's own buffer. */
static struct mount_slot *restore_one(char **p, char *end)
{
	struct mount_slot *s = calloc(1, sizeof(*s));
	char *start;
	int argc;

	if (!s)
		return NULL;
	s->ready_rd = s->rings_fd = s->nodes_fd = -1;
	s->join.conn = -1;
	if (number(p, end, &s->fd) || number(p, end, &s->join.nsfd) || number(p, end, &s->ready) ||
	    s->fd < 0)
		goto fail;
	s->join.fuse_fd = s->fd;
	start = *p;
	if (!field(p, end) || number(p, end, &argc) || argc <= 0 || argc > 256)
		goto fail;
	s->join.argv = calloc((size_t)argc + 1, sizeof(char *));
	if (!s->join.argv)
		goto fail;
	for (int i = 0; i < argc; i++)
		if (!(s->join.argv[i] = field(p, end)))
			goto fail;
	/* one buffer for the strings: rebase the pointers into a copy */
	s->join.buf = malloc((size_t)(*p - start));
	if (!s->join.buf)
		goto fail;
	memcpy(s->join.buf, start, (size_t)(*p - start));
	s->join.mountpoint = s->join.buf;
	for (int i = 0; i < argc; i++)
		s->join.argv[i] = s->join.buf + (s->join.argv[i] - start);
	return s;
fail:
	free(s->join.argv);
	free(s);
	return NULL;
}

static char *read_whole(int fd, size_t *len)
{
	off_t size = lseek(fd, 0, SEEK_END);
	char *buf;

	if (size <= 0 || lseek(fd, 0, SEEK_SET))
		return NULL;
	buf = malloc((size_t)size);
	if (buf && pread(fd, buf, (size_t)size, 0) != size) {
		free(buf);
		return NULL;
	}
	*len = (size_t)size;
	return buf;
}

int slot_table_parse(char *buf, size_t len, struct mount_slot ***slots, size_t *n)
{
	for (char *p = buf, *end = buf + len; p < end;) {
		struct mount_slot *s = restore_one(&p, end), **more;

		if (!s)
			return -EINVAL;
		more = realloc(*slots, (*n + 1) * sizeof(*more));
		if (!more) {
			slot_table_forget(s);
			return -ENOMEM;
		}
		*slots = more;
		(*slots)[(*n)++] = s;
	}
	return 0;
}

void slot_table_forget(struct mount_slot *s)
{
	s->fd = s->join.fuse_fd = s->join.nsfd = s->rings_fd = s->nodes_fd = -1;
	mount_slot_free(s, 0);
}

/* The numbers save_list named, in the slots' order, each given to its slot
 * by set where within [min, max]. */
static void restore_list(const char *name, struct mount_slot **slots, size_t n, long min,
			 long max, void (*set)(struct mount_slot *, long))
{
	const char *v = getenv(name);
	char *end;

	for (size_t i = 0; v && i < n; i++, v = end) {
		long x = strtol(v, &end, 10);

		if (end == v || x < min || x > max)
			break;
		set(slots[i], x);
	}
	unsetenv(name);
}

static void set_rings(struct mount_slot *s, long fd)
{
	s->rings_fd = (int)fd;
}

static void set_nodes(struct mount_slot *s, long fd)
{
	s->nodes_fd = (int)fd;
}

static void set_conn(struct mount_slot *s, long conn)
{
	s->conn = (unsigned)conn;
}

/* From a procfast before them there are none: each slot then gets ring
 * buffers of its own for its next server (mount_slot_exec_server), and is
 * not aborted if given up. */
static void restore_rings_and_conns(struct mount_slot **slots, size_t n)
{
	restore_list(JOINED_RINGS_ENV, slots, n, -1, INT_MAX, set_rings);
	restore_list(JOINED_NODES_ENV, slots, n, -1, INT_MAX, set_nodes);
	restore_list(JOINED_CONNS_ENV, slots, n, 0, UINT_MAX, set_conn);
}

int mount_slots_restore(struct mount_slot ***slots, size_t *n)
{
	const char *v = getenv(JOINED_FD_ENV);
	__do_close int mfd = v ? atoi(v) : -1;
	__do_free char *buf = NULL;
	size_t len = 0, first = *n;
	int r;

	unsetenv(JOINED_FD_ENV);
	if (mfd < 0)
		return 0;
	if (!(buf = read_whole(mfd, &len)))
		return len ? -EINVAL : 0;
	r = slot_table_parse(buf, len, slots, n);
	restore_rings_and_conns(*slots + first, *n - first);
	for (size_t i = first; i < *n; i++)
		mount_slot_keep_fds((*slots)[i]);
	return r;
}
