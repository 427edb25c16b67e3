/* fs/supervisor/handover*.c: the record an upgrade, a takeover or a
 * supervisor starting a server passes on. Its round trip, a record of an
 * older writer (and the legacy variables of the release before), fields a
 * newer writer added, damage, and the pass through the environment. */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fs/supervisor/handover.h"
#include "fs/supervisor/mount_slot.h"

static char *argv_a[] = { "procfast", "-o", "pidns=/run/x", "/mnt/a", NULL };
static char *argv_b[] = { "procfast", "/mnt/b\nwith a newline", NULL };
static struct mount_slot slot_a = { .fd = 40, .ready = 1, .rings_fd = 42, .nodes_fd = 43, .conn = 77,
				    .join = { .nsfd = 41, .mountpoint = "/mnt/a", .argv = argv_a } };
static struct mount_slot slot_b = { .fd = 50, .ready = 0, .rings_fd = -1, .nodes_fd = -1, .conn = 0,
				    .join = { .nsfd = -1, .mountpoint = "/mnt/b\nwith a newline",
					      .argv = argv_b } };
static struct mount_slot *two[] = { &slot_a, &slot_b };

static struct handover sample(void)
{
	struct handover h;

	handover_init(&h);
	h.session_fd = 5;
	h.serve = HANDOVER_SERVE_RESUMED;
	h.pidns_fd = 6;
	h.ready_fd = 7;
	h.rings_fd = 8;
	h.nodes_fd = 9;
	h.log_syslog = 1;
	h.control_fd = 10;
	h.init_pending = 1;
	h.successor_fd = 11;
	h.mounts = two;
	h.nmounts = 2;
	return h;
}

static void same_mount(const struct mount_slot *a, const struct mount_slot *b)
{
	assert(a->fd == b->fd && a->join.nsfd == b->join.nsfd && a->ready == b->ready);
	assert(a->rings_fd == b->rings_fd && a->nodes_fd == b->nodes_fd && a->conn == b->conn);
	assert(b->join.fuse_fd == b->fd && b->ready_rd == -1 && b->join.conn == -1);
	assert(!strcmp(a->join.mountpoint, b->join.mountpoint));
	for (int i = 0; a->join.argv[i] || b->join.argv[i]; i++)
		assert(a->join.argv[i] && b->join.argv[i] && !strcmp(a->join.argv[i], b->join.argv[i]));
}

static void same(const struct handover *a, const struct handover *b)
{
	assert(a->session_fd == b->session_fd && a->serve == b->serve && a->pidns_fd == b->pidns_fd);
	assert(a->ready_fd == b->ready_fd && a->rings_fd == b->rings_fd && a->nodes_fd == b->nodes_fd);
	assert(a->log_syslog == b->log_syslog && a->control_fd == b->control_fd);
	assert(a->init_pending == b->init_pending && a->successor_fd == b->successor_fd);
	assert(a->nmounts == b->nmounts);
	for (size_t i = 0; i < a->nmounts; i++)
		same_mount(a->mounts[i], b->mounts[i]);
}

static void test_round_trip(void)
{
	struct handover h = sample(), back, empty;
	char *buf;
	size_t len;

	assert(handover_encode(&h, &buf, &len) == 0);
	assert(handover_decode(buf, len, &back) == 0);
	assert(back.version == HANDOVER_VERSION);
	same(&h, &back);
	handover_forget(&back);
	free(buf);
	buf = NULL;

	handover_init(&empty);
	assert(handover_encode(&empty, &buf, &len) == 0);
	assert(handover_decode(buf, len, &back) == 0);
	same(&empty, &back);
	assert(back.serve == HANDOVER_SUPERVISE && !back.mounts);
	free(buf);
}

/* ---- records written by hand, as another version would write them ---- */

struct rec {
	char buf[4096];
	size_t len;
};

static void raw(struct rec *r, const void *p, size_t n)
{
	assert(r->len + n <= sizeof(r->buf));
	if (n)
		memcpy(r->buf + r->len, p, n);
	r->len += n;
}

static void header(struct rec *r, uint32_t version, uint32_t readable_from)
{
	uint32_t v[2] = { version, readable_from };

	r->len = 0;
	raw(r, "PFHO", 4);
	raw(r, v, sizeof(v));
}

static void field(struct rec *r, uint32_t tag, const void *p, uint32_t n)
{
	uint32_t head[2] = { tag, n };

	raw(r, head, sizeof(head));
	raw(r, p, n);
}

static void num(struct rec *r, uint32_t tag, int64_t v)
{
	field(r, tag, &v, sizeof(v));
}

/* The tags of version 1 (handover.c) */
enum { END, SESSION_FD, SERVE, PIDNS_FD, READY_FD, RINGS_FD, LOG_SYSLOG, CONTROL_FD, NODES_FD,
       INIT_PENDING, SUCCESSOR_FD, MOUNT };
enum { M_FD = 1, M_NSFD, M_READY, M_CONN, M_RINGS_FD, M_NODES_FD, M_POINT, M_ARG };

/* A mount as a writer that knew only its fd, mount point and command line. */
static void old_mount(struct rec *r, int fd, const char *point, const char *arg)
{
	struct rec m = { .len = 0 };

	num(&m, M_FD, fd);
	field(&m, M_POINT, point, (uint32_t)strlen(point));
	field(&m, M_ARG, arg, (uint32_t)strlen(arg));
	field(r, MOUNT, m.buf, (uint32_t)m.len);
}

/* An older writer's record lacks fields: they keep their defaults. */
static void test_older_record(void)
{
	struct rec r;
	struct handover h;

	header(&r, 1, 1);
	num(&r, SESSION_FD, 5);
	old_mount(&r, 40, "/mnt/a", "procfast");
	field(&r, END, NULL, 0);
	assert(handover_decode(r.buf, r.len, &h) == 0);
	assert(h.session_fd == 5 && h.serve == HANDOVER_SUPERVISE && h.nmounts == 1);
	assert(h.pidns_fd == -1 && h.ready_fd == -1 && h.rings_fd == -1 && h.nodes_fd == -1);
	assert(h.control_fd == -1 && h.successor_fd == -1 && !h.init_pending && !h.log_syslog);
	assert(h.mounts[0]->fd == 40 && h.mounts[0]->join.nsfd == -1 && h.mounts[0]->rings_fd == -1);
	assert(h.mounts[0]->nodes_fd == -1 && h.mounts[0]->conn == 0 && !h.mounts[0]->ready);
	assert(!strcmp(h.mounts[0]->join.argv[0], "procfast") && !h.mounts[0]->join.argv[1]);
	handover_forget(&h);
}

/* A newer writer's fields, at the top and in a mount, are skipped; a record
 * that says our version cannot read it is refused. */
static void test_unknown_fields(void)
{
	struct rec r, m = { .len = 0 };
	struct handover h;

	header(&r, 7, 1);
	field(&r, 99, "what version 7 added", 20);
	num(&r, SESSION_FD, 5);
	num(&m, M_FD, 40);
	field(&m, 1234, "\0\1\2", 3);
	field(&m, M_POINT, "/mnt/a", 6);
	field(&m, M_ARG, "procfast", 8);
	field(&r, MOUNT, m.buf, (uint32_t)m.len);
	num(&r, CONTROL_FD, 12);
	field(&r, END, NULL, 0);
	assert(handover_decode(r.buf, r.len, &h) == 0);
	assert(h.version == 7 && h.session_fd == 5 && h.control_fd == 12 && h.nmounts == 1);
	assert(h.mounts[0]->fd == 40 && !strcmp(h.mounts[0]->join.mountpoint, "/mnt/a"));
	handover_forget(&h);

	header(&r, 2, 2); /* version 2 readers and later only */
	num(&r, SESSION_FD, 5);
	field(&r, END, NULL, 0);
	assert(handover_decode(r.buf, r.len, &h) == -EPROTONOSUPPORT);
	assert(h.session_fd == -1 && !h.mounts);
}

static void refused(const char *buf, size_t len)
{
	struct handover h;

	assert(handover_decode(buf, len, &h) == -EINVAL);
	assert(h.session_fd == -1 && !h.mounts && !h.nmounts);
}

static void test_damage(void)
{
	struct handover h = sample(), back;
	struct rec r, m = { .len = 0 };
	char *buf;
	size_t len;

	assert(handover_encode(&h, &buf, &len) == 0);
	for (size_t cut = 0; cut < len; cut++) /* cut short anywhere: no end field */
		refused(buf, cut);
	for (size_t i = 0; i < len; i++) { /* any byte changed: read or refused, nothing else */
		buf[i] ^= 0x5a;
		if (handover_decode(buf, len, &back) == 0)
			handover_forget(&back);
		buf[i] ^= 0x5a;
	}
	buf[0] = 'X';
	refused(buf, len);
	free(buf);

	header(&r, 1, 1); /* a field longer than the record */
	raw(&r, (uint32_t[]){ SESSION_FD, 1000 }, 8);
	refused(r.buf, r.len);
	header(&r, 1, 1); /* a number of another size */
	field(&r, SESSION_FD, "\5\0\0\0", 4);
	field(&r, END, NULL, 0);
	refused(r.buf, r.len);
	header(&r, 1, 1); /* an fd below -1 */
	num(&r, PIDNS_FD, -7);
	field(&r, END, NULL, 0);
	refused(r.buf, r.len);
	header(&r, 1, 1); /* a mount without its session fd */
	field(&r, M_POINT, "/mnt/a", 6);
	field(&m, M_POINT, "/mnt/a", 6);
	field(&m, M_ARG, "procfast", 8);
	field(&r, MOUNT, m.buf, (uint32_t)m.len);
	field(&r, END, NULL, 0);
	refused(r.buf, r.len);
	header(&r, 1, 1); /* a NUL inside a string */
	m.len = 0;
	num(&m, M_FD, 40);
	field(&m, M_POINT, "/mnt\0a", 6);
	field(&m, M_ARG, "procfast", 8);
	field(&r, MOUNT, m.buf, (uint32_t)m.len);
	field(&r, END, NULL, 0);
	refused(r.buf, r.len);
	header(&r, 0, 0); /* no version */
	field(&r, END, NULL, 0);
	refused(r.buf, r.len);
}

/* ---- through the environment ---- */

static int cloexec(int fd)
{
	return fcntl(fd, F_GETFD) & FD_CLOEXEC;
}

/* fds that exist, so that taking them finds them open */
static void real_fds(struct handover *h, int *fds)
{
	for (int i = 0; i < 9; i++)
		assert((fds[i] = memfd_create("t", MFD_CLOEXEC)) >= 0);
	h->session_fd = fds[0];
	h->pidns_fd = fds[1];
	h->nodes_fd = fds[2];
	h->control_fd = fds[3];
	h->successor_fd = -1;
	h->ready_fd = -1;
	h->rings_fd = -1;
	slot_a.fd = fds[4];
	slot_a.join.nsfd = fds[5];
	slot_a.rings_fd = fds[6];
	slot_a.nodes_fd = fds[7];
	slot_b.fd = fds[8];
}

static void test_pass_and_take(void)
{
	struct handover h = sample(), back;
	struct handover_pass pass;
	int fds[9];

	real_fds(&h, fds);
	assert(handover_pass_on(&h, &pass) == 0);
	assert(pass.record >= 0 && pass.table >= 0 && getenv(HANDOVER_ENV));
	assert(!cloexec(fds[0]) && !cloexec(fds[5]) && !cloexec(pass.record));
	/* the release before's variables, beside the record, as it wrote them */
	assert(!strcmp(getenv("PROCFAST_SERVE"), "resumed"));
	assert(atoi(getenv("PROCFAST_RESUME_FD")) == fds[0]);
	assert(!strcmp(getenv("PROCFAST_INIT_PENDING"), "1"));
	assert(!strcmp(getenv("PROCFAST_JOINED_CONNS"), "77 0"));

	assert(handover_take(&back) == 0); /* the record; the legacy table closed */
	assert(back.version == HANDOVER_VERSION);
	same(&h, &back);
	assert(cloexec(fds[0]) && cloexec(fds[5]) && cloexec(fds[8]));
	assert(!getenv(HANDOVER_ENV) && !getenv("PROCFAST_RESUME_FD") && !getenv("PROCFAST_JOINED_FD"));
	assert(fcntl(pass.table, F_GETFD) < 0 && errno == EBADF);
	handover_forget(&back);

	/* the legacy variables alone, as a binary of the release before would
	 * pass them (and read them: a rollback) */
	assert(handover_pass_on(&h, &pass) == 0);
	unsetenv(HANDOVER_ENV);
	close(pass.record);
	assert(handover_take(&back) == 0 && back.version == 0);
	same(&h, &back);
	handover_forget(&back);

	/* a record that cannot be read: the variables beside it */
	assert(handover_pass_on(&h, &pass) == 0);
	assert(ftruncate(pass.record, 10) == 0);
	assert(handover_take(&back) == 0 && back.version == 0);
	same(&h, &back);
	handover_forget(&back);
	close(pass.record);

	/* nothing handed over */
	assert(handover_take(&back) == 0 && back.session_fd == -1 && !back.nmounts);

	/* an execve that did not happen: the fds are ours again */
	assert(handover_pass_on(&h, &pass) == 0);
	handover_unpass(&h, &pass);
	assert(cloexec(fds[0]) && cloexec(fds[7]) && !getenv(HANDOVER_ENV) && pass.record == -1);
	for (int i = 0; i < 9; i++)
		close(fds[i]);
}

int main(void)
{
	test_round_trip();
	test_older_record();
	test_unknown_fields();
	test_damage();
	test_pass_and_take();
	printf("handover: ok\n");
	return 0;
}
