/* The hand-over record's format (handover.h):
 *
 *	"PFHO" u32 version u32 readable_from     the header
 *	u32 tag u32 length payload               fields, repeated
 *	u32 0 u32 0                              the end (a record without it is cut short)
 *
 * in host byte order (both sides run on this machine). A number is 8 bytes
 * (int64); a string is its bytes, no NUL; a mount (TAG_MOUNT) is fields of
 * its own (MOUNT_*) in its payload. A reader skips the tags it does not know
 * and refuses a record whose readable_from is above its version. */
#include "fs/supervisor/handover.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fs/supervisor/mount_slot.h"

#define MAGIC "PFHO"
/* The oldest reader that reads what we write: version 1 is the first. */
#define READABLE_FROM 1

enum tag {
	TAG_END, TAG_SESSION_FD, TAG_SERVE, TAG_PIDNS_FD, TAG_READY_FD, TAG_RINGS_FD,
	TAG_LOG_SYSLOG, TAG_CONTROL_FD, TAG_NODES_FD, TAG_INIT_PENDING, TAG_SUCCESSOR_FD,
	TAG_MOUNT,
};

enum mount_tag {
	MOUNT_FD = 1, MOUNT_NSFD, MOUNT_READY, MOUNT_CONN, MOUNT_RINGS_FD, MOUNT_NODES_FD,
	MOUNT_POINT, MOUNT_ARG,
};

void handover_init(struct handover *h)
{
	*h = (struct handover){ .session_fd = -1, .pidns_fd = -1, .ready_fd = -1, .rings_fd = -1,
				.nodes_fd = -1, .control_fd = -1, .successor_fd = -1 };
}

void handover_forget(struct handover *h)
{
	for (size_t i = 0; i < h->nmounts; i++)
		mount_slot_forget(h->mounts[i]);
	free(h->mounts);
	h->mounts = NULL;
	h->nmounts = 0;
}

/* ---- writing ---- */

struct out {
	char *buf;
	size_t len, cap;
	int err;
};

static void put(struct out *o, const void *p, size_t n)
{
	if (o->err || !n) /* memcpy takes no NULL, even for nothing */
		return;
	if (o->len + n > o->cap) {
		size_t cap = o->cap ? o->cap * 2 : 512;
		char *more;

		while (cap < o->len + n)
			cap *= 2;
		if (cap > HANDOVER_MAX_BYTES || !(more = realloc(o->buf, cap))) {
			o->err = cap > HANDOVER_MAX_BYTES ? -E2BIG : -ENOMEM;
			return;
		}
		o->buf = more;
		o->cap = cap;
	}
	memcpy(o->buf + o->len, p, n);
	o->len += n;
}

static void put_field(struct out *o, uint32_t tag, const void *p, size_t n)
{
	uint32_t head[2] = { tag, (uint32_t)n };

	put(o, head, sizeof(head));
	put(o, p, n);
}

static void put_num(struct out *o, uint32_t tag, int64_t v)
{
	put_field(o, tag, &v, sizeof(v));
}

static void put_str(struct out *o, uint32_t tag, const char *s)
{
	put_field(o, tag, s, strlen(s));
}

/* A mount's fields, written apart and then as one field. */
static void put_mount(struct out *o, const struct mount_slot *s)
{
	struct out m = { 0 };

	put_num(&m, MOUNT_FD, s->fd);
	put_num(&m, MOUNT_NSFD, s->join.nsfd);
	put_num(&m, MOUNT_READY, s->ready);
	put_num(&m, MOUNT_CONN, s->conn);
	put_num(&m, MOUNT_RINGS_FD, s->rings_fd);
	put_num(&m, MOUNT_NODES_FD, s->nodes_fd);
	put_str(&m, MOUNT_POINT, s->join.mountpoint);
	for (int i = 0; s->join.argv[i]; i++)
		put_str(&m, MOUNT_ARG, s->join.argv[i]);
	if (m.err && !o->err)
		o->err = m.err;
	put_field(o, TAG_MOUNT, m.buf, m.len);
	free(m.buf);
}

int handover_encode(const struct handover *h, char **buf, size_t *len)
{
	struct out o = { 0 };
	uint32_t version[2] = { HANDOVER_VERSION, READABLE_FROM };

	put(&o, MAGIC, 4);
	put(&o, version, sizeof(version));
	put_num(&o, TAG_SESSION_FD, h->session_fd);
	put_num(&o, TAG_SERVE, h->serve);
	put_num(&o, TAG_PIDNS_FD, h->pidns_fd);
	put_num(&o, TAG_READY_FD, h->ready_fd);
	put_num(&o, TAG_RINGS_FD, h->rings_fd);
	put_num(&o, TAG_LOG_SYSLOG, h->log_syslog);
	put_num(&o, TAG_CONTROL_FD, h->control_fd);
	put_num(&o, TAG_NODES_FD, h->nodes_fd);
	put_num(&o, TAG_INIT_PENDING, h->init_pending);
	put_num(&o, TAG_SUCCESSOR_FD, h->successor_fd);
	for (size_t i = 0; i < h->nmounts; i++)
		put_mount(&o, h->mounts[i]);
	put_field(&o, TAG_END, NULL, 0);
	if (o.err) {
		free(o.buf);
		return o.err;
	}
	*buf = o.buf;
	*len = o.len;
	return 0;
}

/* ---- reading ---- */

struct field {
	uint32_t tag;
	const char *p;
	uint32_t len;
};

/* The next field of [*at, end); 0, or -EINVAL if it runs past the end. */
static int next_field(const char **at, const char *end, struct field *f)
{
	uint32_t head[2];

	if ((size_t)(end - *at) < sizeof(head))
		return -EINVAL;
	memcpy(head, *at, sizeof(head));
	*at += sizeof(head);
	if (head[1] > (size_t)(end - *at))
		return -EINVAL;
	*f = (struct field){ head[0], *at, head[1] };
	*at += head[1];
	return 0;
}

/* A number within [min, max]; a number of another size is damage. */
static int get_num(const struct field *f, int64_t min, int64_t max, int64_t *v)
{
	if (f->len != sizeof(*v))
		return -EINVAL;
	memcpy(v, f->p, sizeof(*v));
	return *v < min || *v > max ? -EINVAL : 0;
}

static int get_int(const struct field *f, int min, int *v)
{
	int64_t x;
	int r = get_num(f, min, INT_MAX, &x);

	if (!r)
		*v = (int)x;
	return r;
}

/* A string field appended to the mount's buffer, NUL-terminated; a NUL
 * inside is damage. Its offset in the buffer. */
static int get_str(const struct field *f, char **buf, size_t *used, size_t *off)
{
	char *more;

	if (memchr(f->p, '\0', f->len) || !(more = realloc(*buf, *used + f->len + 1)))
		return memchr(f->p, '\0', f->len) ? -EINVAL : -ENOMEM;
	memcpy(more + *used, f->p, f->len);
	more[*used + f->len] = '\0';
	*off = *used;
	*used += f->len + 1;
	*buf = more;
	return 0;
}

struct mount_parse {
	struct mount_slot *s;
	size_t point, args[HANDOVER_MAX_ARGS];
	int has_point, argc;
	size_t used;
};

static int mount_field(struct mount_parse *m, const struct field *f)
{
	struct mount_slot *s = m->s;
	int64_t conn;
	int r;

	switch (f->tag) {
	case MOUNT_FD: return get_int(f, -1, &s->fd);
	case MOUNT_NSFD: return get_int(f, -1, &s->join.nsfd);
	case MOUNT_READY: return get_int(f, 0, &s->ready);
	case MOUNT_RINGS_FD: return get_int(f, -1, &s->rings_fd);
	case MOUNT_NODES_FD: return get_int(f, -1, &s->nodes_fd);
	case MOUNT_CONN:
		if ((r = get_num(f, 0, UINT_MAX, &conn)))
			return r;
		s->conn = (unsigned)conn;
		return 0;
	case MOUNT_POINT:
		m->has_point = 1;
		return get_str(f, &s->join.buf, &m->used, &m->point);
	case MOUNT_ARG:
		if (m->argc == HANDOVER_MAX_ARGS)
			return -EINVAL;
		return get_str(f, &s->join.buf, &m->used, &m->args[m->argc++]);
	default:
		return 0; /* a newer writer's: not ours to know */
	}
}

/* The strings' pointers, once the buffer no longer moves. */
static int mount_finish(struct mount_parse *m)
{
	struct mount_slot *s = m->s;

	if (s->fd < 0 || !m->has_point || !m->argc ||
	    !(s->join.argv = calloc((size_t)m->argc + 1, sizeof(char *))))
		return s->fd < 0 || !m->has_point || !m->argc ? -EINVAL : -ENOMEM;
	s->join.mountpoint = s->join.buf + m->point;
	for (int i = 0; i < m->argc; i++)
		s->join.argv[i] = s->join.buf + m->args[i];
	s->join.fuse_fd = s->fd;
	return 0;
}

static int get_mount(const struct field *f, struct handover *h)
{
	struct mount_parse *m = calloc(1, sizeof(*m));
	const char *at = f->p, *end = f->p + f->len;
	struct mount_slot **more;
	struct field sub;
	int r = m ? 0 : -ENOMEM;

	if (!r && !(m->s = calloc(1, sizeof(*m->s))))
		r = -ENOMEM;
	if (!r) {
		m->s->fd = m->s->join.nsfd = m->s->rings_fd = m->s->nodes_fd = -1;
		m->s->ready_rd = m->s->join.conn = m->s->join.fuse_fd = -1;
	}
	while (!r && at < end && !(r = next_field(&at, end, &sub)))
		r = mount_field(m, &sub);
	if (!r)
		r = mount_finish(m);
	if (!r && !(more = realloc(h->mounts, (h->nmounts + 1) * sizeof(*more))))
		r = -ENOMEM;
	if (!r) {
		h->mounts = more;
		h->mounts[h->nmounts++] = m->s;
	} else if (m && m->s) {
		mount_slot_forget(m->s);
	}
	free(m);
	return r;
}

static int top_field(const struct field *f, struct handover *h)
{
	int serve, r;

	switch (f->tag) {
	case TAG_SESSION_FD: return get_int(f, -1, &h->session_fd);
	case TAG_PIDNS_FD: return get_int(f, -1, &h->pidns_fd);
	case TAG_READY_FD: return get_int(f, -1, &h->ready_fd);
	case TAG_RINGS_FD: return get_int(f, -1, &h->rings_fd);
	case TAG_LOG_SYSLOG: return get_int(f, 0, &h->log_syslog);
	case TAG_CONTROL_FD: return get_int(f, -1, &h->control_fd);
	case TAG_NODES_FD: return get_int(f, -1, &h->nodes_fd);
	case TAG_INIT_PENDING: return get_int(f, 0, &h->init_pending);
	case TAG_SUCCESSOR_FD: return get_int(f, -1, &h->successor_fd);
	case TAG_MOUNT: return get_mount(f, h);
	case TAG_SERVE:
		if ((r = get_int(f, 0, &serve)) || serve > HANDOVER_SERVE_RESUMED)
			return r ? r : -EINVAL;
		h->serve = (enum handover_serve)serve;
		return 0;
	default:
		return 0; /* a newer writer's: skipped */
	}
}

static int decode_fields(const char *at, const char *end, struct handover *h)
{
	struct field f;
	int r;

	for (;;) {
		if ((r = next_field(&at, end, &f)))
			return r; /* cut short: no end field */
		if (f.tag == TAG_END)
			return 0;
		if ((r = top_field(&f, h)))
			return r;
	}
}

int handover_decode(const char *buf, size_t len, struct handover *h)
{
	uint32_t version[2];
	int r;

	handover_init(h);
	if (len < 4 + sizeof(version) || memcmp(buf, MAGIC, 4))
		return -EINVAL;
	memcpy(version, buf + 4, sizeof(version));
	if (!version[0] || version[1] > version[0])
		return -EINVAL;
	if (version[1] > HANDOVER_VERSION)
		return -EPROTONOSUPPORT;
	r = decode_fields(buf + 4 + sizeof(version), buf + len, h);
	if (r) {
		handover_forget(h);
		handover_init(h);
		return r;
	}
	h->version = version[0];
	return 0;
}
