/* The hand-over of the release before (the binary of commit 156725c): one
 * environment variable per field, and the handed-over mounts in a memfd
 * table (the slot table: session fd, pidns= fd, ready, mount point, argc,
 * then the arguments, each NUL-terminated) whose ring buffers, node records
 * and fusectl numbers are lists in variables of their own.
 *
 * Both ways, for one release: handover_from_legacy lets this binary take
 * over from the release before (an upgrade, a takeover, a server executed by
 * an old supervisor); handover_to_legacy is written beside the record so
 * that a rollback to the release before, which knows no record, still finds
 * everything. Drop the writing side in the release after this one. */
#include "fs/supervisor/handover.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fs/lib/cleanup.h"
#include "fs/supervisor/mount_slot.h"

#define RESUME_ENV "PROCFAST_RESUME_FD"
#define SERVE_ENV "PROCFAST_SERVE"          /* "first" or "resumed" */
#define PIDNS_FD_ENV "PROCFAST_PIDNS_FD"
#define READY_FD_ENV "PROCFAST_READY_FD"
#define RINGS_FD_ENV "PROCFAST_RINGS_FD"
#define LOG_ENV "PROCFAST_LOG"              /* "syslog" */
#define JOINED_FD_ENV "PROCFAST_JOINED_FD"  /* the slot table's memfd */
#define JOINED_RINGS_ENV "PROCFAST_JOINED_RINGS" /* lists, in the table's order */
#define JOINED_CONNS_ENV "PROCFAST_JOINED_CONNS"
#define JOINED_NODES_ENV "PROCFAST_JOINED_NODES"
#define CONTROL_FD_ENV "PROCFAST_CONTROL_FD"
#define NODES_FD_ENV "PROCFAST_NODES_FD"
#define INIT_PENDING_ENV "PROCFAST_INIT_PENDING"
#define SUCCESSOR_FD_ENV "PROCFAST_SUCCESSOR_FD"

/* What a takeover carries to the successor: an upgrade's legacy variables
 * (the record goes apart, takeover.c). */
const char *const handover_passed_env[] = {
	RESUME_ENV, JOINED_FD_ENV, JOINED_RINGS_ENV, JOINED_CONNS_ENV,
	CONTROL_FD_ENV, NODES_FD_ENV, JOINED_NODES_ENV, INIT_PENDING_ENV, NULL,
};

static const char *const all_env[] = {
	HANDOVER_ENV, RESUME_ENV, SERVE_ENV, PIDNS_FD_ENV, READY_FD_ENV, RINGS_FD_ENV, LOG_ENV,
	JOINED_FD_ENV, JOINED_RINGS_ENV, JOINED_CONNS_ENV, JOINED_NODES_ENV, CONTROL_FD_ENV,
	NODES_FD_ENV, INIT_PENDING_ENV, SUCCESSOR_FD_ENV, NULL,
};

void handover_unset_env(void)
{
	for (size_t i = 0; all_env[i]; i++)
		unsetenv(all_env[i]);
}

void handover_drop_legacy(void)
{
	const char *v = getenv(JOINED_FD_ENV);
	int fd = v ? atoi(v) : -1;

	if (fd >= 3)
		close(fd);
	handover_unset_env();
}

/* ---- the slot table ---- */

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
	if (!field(p, end) || number(p, end, &argc) || argc <= 0 || argc > HANDOVER_MAX_ARGS)
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

int slot_table_parse(char *buf, size_t len, struct mount_slot ***slots, size_t *n)
{
	for (char *p = buf, *end = buf + len; p < end;) {
		struct mount_slot *s = restore_one(&p, end), **more;

		if (!s)
			return -EINVAL;
		more = realloc(*slots, (*n + 1) * sizeof(*more));
		if (!more) {
			mount_slot_forget(s);
			return -ENOMEM;
		}
		*slots = more;
		(*slots)[(*n)++] = s;
	}
	return 0;
}

/* ---- reading the variables ---- */

/* A number a variable names, or dflt if unset or not one. */
static long env_num(const char *name, long dflt)
{
	const char *v = getenv(name);
	char *end;
	long n;

	if (!v)
		return dflt;
	n = strtol(v, &end, 10);
	return end == v || *end || n < -1 || n > INT_MAX ? dflt : n;
}

/* Lists of numbers, one per slot in the table's order, within [min, max]. */
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

static int read_table(struct handover *h)
{
	__do_close int mfd = (int)env_num(JOINED_FD_ENV, -1);
	__do_free char *buf = NULL;
	off_t size;
	int r;

	if (mfd < 0 || (size = lseek(mfd, 0, SEEK_END)) <= 0)
		return 0;
	if (size > HANDOVER_MAX_BYTES || !(buf = malloc((size_t)size)))
		return -ENOMEM;
	if (pread(mfd, buf, (size_t)size, 0) != size)
		return -EIO;
	if ((r = slot_table_parse(buf, (size_t)size, &h->mounts, &h->nmounts)))
		return r;
	/* from a procfast before these lists there are none: each slot then
	 * gets ring buffers of its own, and is not aborted if given up */
	restore_list(JOINED_RINGS_ENV, h->mounts, h->nmounts, -1, INT_MAX, set_rings);
	restore_list(JOINED_NODES_ENV, h->mounts, h->nmounts, -1, INT_MAX, set_nodes);
	restore_list(JOINED_CONNS_ENV, h->mounts, h->nmounts, 0, UINT_MAX, set_conn);
	return 0;
}

int handover_from_legacy(struct handover *h)
{
	const char *serve = getenv(SERVE_ENV);
	int r;

	handover_init(h);
	h->session_fd = (int)env_num(RESUME_ENV, -1);
	h->serve = !serve ? HANDOVER_SUPERVISE
		   : strcmp(serve, "resumed") ? HANDOVER_SERVE_FIRST : HANDOVER_SERVE_RESUMED;
	h->pidns_fd = (int)env_num(PIDNS_FD_ENV, -1);
	h->ready_fd = (int)env_num(READY_FD_ENV, -1);
	h->rings_fd = (int)env_num(RINGS_FD_ENV, -1);
	h->nodes_fd = (int)env_num(NODES_FD_ENV, -1);
	h->log_syslog = getenv(LOG_ENV) != NULL;
	h->control_fd = (int)env_num(CONTROL_FD_ENV, -1);
	h->init_pending = getenv(INIT_PENDING_ENV) != NULL;
	h->successor_fd = (int)env_num(SUCCESSOR_FD_ENV, -1);
	/* a damaged table loses the handed-over mounts, not our own */
	r = read_table(h);
	handover_unset_env();
	if (r)
		handover_forget(h);
	return r;
}

/* ---- writing them ---- */

static int set_fd(const char *name, int fd)
{
	char v[16];

	if (fd < 0)
		return 0;
	snprintf(v, sizeof(v), "%d", fd);
	return setenv(name, v, 1) ? -errno : 0;
}

/* A number of each slot, in their order: "3 -1 7". */
static int save_list(const char *name, const struct handover *h, long (*of)(const struct mount_slot *))
{
	__do_free char *list = malloc(h->nmounts * 12 + 1);
	size_t at = 0;

	if (!list)
		return -ENOMEM;
	list[0] = 0;
	for (size_t i = 0; i < h->nmounts; i++)
		at += (size_t)sprintf(list + at, "%s%ld", i ? " " : "", of(h->mounts[i]));
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

/* The table in a memfd left open across execve, and its lists. */
static int write_table(const struct handover *h, int *table)
{
	__do_close int mfd = memfd_create("procfast-slots", 0);
	int r;

	if (mfd < 0)
		return -errno;
	for (size_t i = 0; i < h->nmounts; i++)
		if ((r = slot_table_write(mfd, h->mounts[i])))
			return r;
	if ((r = set_fd(JOINED_FD_ENV, mfd)) || (r = save_list(JOINED_RINGS_ENV, h, rings_of)) ||
	    (r = save_list(JOINED_NODES_ENV, h, nodes_of)) ||
	    (r = save_list(JOINED_CONNS_ENV, h, conn_of)))
		return r;
	*table = move_fd(&mfd);
	return 0;
}

int handover_to_legacy(const struct handover *h, int *table)
{
	static const char *const serve[] = { NULL, "first", "resumed" };
	int r;

	*table = -1;
	if ((r = set_fd(RESUME_ENV, h->session_fd)) || (r = set_fd(PIDNS_FD_ENV, h->pidns_fd)) ||
	    (r = set_fd(READY_FD_ENV, h->ready_fd)) || (r = set_fd(RINGS_FD_ENV, h->rings_fd)) ||
	    (r = set_fd(NODES_FD_ENV, h->nodes_fd)) || (r = set_fd(CONTROL_FD_ENV, h->control_fd)) ||
	    (r = set_fd(SUCCESSOR_FD_ENV, h->successor_fd)))
		return r;
	if ((serve[h->serve] && setenv(SERVE_ENV, serve[h->serve], 1)) ||
	    (h->log_syslog && setenv(LOG_ENV, "syslog", 1)) ||
	    (h->init_pending && setenv(INIT_PENDING_ENV, "1", 1)))
		return -errno;
	return h->nmounts ? write_table(h, table) : 0;
}
