/* How requests reach the server (transport.h). */
#include "fs/transport/transport.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "fs/caller/fair.h"
#include "fs/lib/fuse_passthrough.h"
#include "fs/lib/log.h"
#include "fs/lib/settings.h"
#include "fs/transport/drain.h"
#include "fs/transport/fuse_uring_abi.h"
#include "fs/transport/uring.h"
#include "fs/transport/uring_slots.h"

#define URING_PARAM "/sys/module/fuse/parameters/enable_uring"

static enum transport_mode mode;
static struct fuse_session *session;
static const char *mount_path;
static unsigned per_queue = URING_THREADS_DEFAULT; /* ring threads a queue */
static int shared; /* the buffers are a memfd every server of the mount maps */
/* INIT's unique id from its read until its reply, and what it offered. */
static atomic_ullong init_unique;
static void (*on_init_answered)(void);
static atomic_int init_offers_uring;
static atomic_int init_offers_passthrough;
static char described[160] = "/dev/fuse";

int transport_mode_of(const char *name)
{
	static const char *const names[] = { [URING_AUTO] = "auto", [URING_ON] = "on",
					     [URING_OFF] = "off" };

	for (int i = 0; i < 3; i++)
		if (!strcmp(name, names[i]))
			return i;
	return -1;
}

/* 1 allowed, 0 not, -1 a kernel without FUSE over io_uring. */
static int uring_allowed(void)
{
	char c = 0;
	FILE *f = fopen(URING_PARAM, "re");

	if (!f)
		return -1;
	if (fread(&c, 1, 1, f) != 1)
		c = 0;
	fclose(f);
	return c == 'Y';
}

int transport_preflight(enum transport_mode m)
{
	int allowed = uring_allowed();

	if (m != URING_ON || allowed > 0)
		return 0;
	if (allowed < 0)
		fprintf(stderr, "procfast: uring=on: this kernel has no FUSE over io_uring "
				"(Linux 6.14 or later, CONFIG_FUSE_IO_URING)\n");
	else
		fprintf(stderr, "procfast: uring=on: the kernel does not allow FUSE over io_uring; "
				"allow it with: echo Y > %s\n", URING_PARAM);
	return -1;
}

int transport_reserve(enum transport_mode m, unsigned threads, int rings_fd)
{
	unsigned per = threads * URING_ENTRIES_PER_THREAD;
	int r = 0;

	if (m == URING_OFF)
		return rings_fd;
	/* whatever enable_uring says: a resumed server takes its rings back, and
	 * the slots keep what INIT chose (uring_slots_conn_rings) */
	if (rings_fd < 0 && uring_allowed() >= 0 &&
	    (rings_fd = uring_slots_memfd()) < 0)
		log_warn("io_uring buffers in a memfd: %s: an upgrade starts with none",
			 strerror(errno));
	if (rings_fd >= 0)
		shared = !(r = uring_slots_share(rings_fd, uring_queue_count(), per));
	else if (uring_allowed() > 0)
		r = uring_slots_reserve(uring_queue_count(), per);
	if (r)
		log_warn("io_uring buffers of the mount's servers: %s", strerror(-r));
	return rings_fd;
}

static void describe_rings(void)
{
	snprintf(described, sizeof(described), "io_uring, %u queues x %u entries%s",
		 uring_slots_queues(), uring_slots_per_queue(),
		 uring_idle_is_iowait() ? "; its idle threads count as iowait (a kernel without "
					  "IORING_ENTER_NO_IOWAIT, Linux 6.15)" : "");
}

/* uring=on and no rings: the mount ends rather than serve otherwise. */
static void rings_failed(const char *why)
{
	snprintf(described, sizeof(described), "/dev/fuse (io_uring: %s)", why);
	if (mode == URING_ON) {
		log_err("uring=on: no io_uring: %s", why);
		fuse_session_exit(session);
	} else {
		log_warn("serving through /dev/fuse: io_uring: %s", why);
	}
}

static void start_rings(int resumed)
{
	int r = uring_start(session, per_queue, mount_path, resumed);

	/* resumed on a connection that never used io_uring, where it is not allowed */
	if (r == -EOPNOTSUPP && resumed && mode == URING_AUTO)
		return;
	if (r)
		rings_failed(strerror(-r));
	else
		describe_rings();
	if (!r && !resumed)
		log_info("serving through %s", described);
}

/* The INIT reply asks for io_uring where the kernel offered it and the
 * rings' buffers hold what the reply allows a request to carry. */
static int ask_for_rings(struct iovec *iov, int count)
{
	const struct fuse_out_header *out = iov[0].iov_base;
	struct fuse_init_out *o;

	if (mode == URING_OFF || out->error || count < 2 || iov[1].iov_len < sizeof(*o))
		return 0;
	if (!atomic_load(&init_offers_uring)) {
		/* auto where it is not allowed: the log's first line said so */
		if (mode == URING_ON)
			rings_failed("not offered by the kernel (" URING_PARAM ")");
		return 0;
	}
	o = iov[1].iov_base;
	if (o->max_write > URING_PAYLOAD || (size_t)o->max_pages * 4096 > URING_PAYLOAD) {
		rings_failed("requests larger than the ring buffers");
		return 0;
	}
	o->flags |= FUSE_INIT_EXT;
	o->flags2 |= (uint32_t)(FUSE_OVER_IO_URING >> 32);
	return 1;
}

/* libfuse's loop, ended by an unmount, cancels the workers still in their
 * read: the drain must not wait for them (fs/transport/drain.h). */
static void read_cancelled(void *unused)
{
	(void)unused;
	drain_read_end();
}

static ssize_t transport_read(int fd, void *buf, size_t len, void *userdata)
{
	const struct fuse_in_header *in = buf;
	ssize_t n;

	drain_taken_end(); /* the request this thread read before is done with */
	if (drain_read_begin()) {
		/* libfuse reads again at once until the session ends: not a spin */
		usleep(1000);
		errno = EINTR;
		return -1;
	}
	pthread_cleanup_push(read_cancelled, NULL);
	n = read(fd, buf, len);
	if (n > 0)
		drain_taken_begin(); /* before the drain sees this thread out of its read */
	pthread_cleanup_pop(1);

	(void)userdata;
	if (n >= (ssize_t)(sizeof(*in) + sizeof(struct fuse_init_in)) && in->opcode == FUSE_INIT) {
		const struct fuse_init_in *ii = (const void *)(in + 1);
		uint64_t offered = ii->flags;

		if (offered & FUSE_INIT_EXT)
			offered |= (uint64_t)ii->flags2 << 32;
		atomic_store(&init_offers_uring, !!(offered & FUSE_OVER_IO_URING));
		atomic_store(&init_offers_passthrough, passthrough_offered(offered));
		atomic_store(&init_unique, in->unique);
	}
	return n;
}

/* -o snapshot: the INIT reply asks for passthrough, or the mount ends (the
 * start-up probe said the kernel has it: only a kernel built without it
 * gets here). */
static void ask_for_passthrough(struct iovec *iov, int count)
{
	if (!pf.snapshot)
		return;
	if (atomic_load(&init_offers_passthrough)) {
		passthrough_ask_init(iov, count);
		return;
	}
	log_err("snapshot: the kernel does not offer FUSE passthrough on this mount");
	fuse_session_exit(session);
}

static ssize_t transport_writev(int fd, struct iovec *iov, int count, void *userdata)
{
	const struct fuse_out_header *out = iov[0].iov_base;
	int rings = 0, init = 0;
	ssize_t n;

	(void)userdata;
	/* a reply, not a notification: its thread is free for its caller's next request */
	if (out->unique) {
		fair_replying();
		passthrough_patch_open(iov, count); /* a snapshot's OPEN (snapshot.c) */
	}
	if (uring_owns_reply(out->unique))
		return uring_reply(iov, count);
	if (out->unique && out->unique == atomic_load(&init_unique)) {
		atomic_store(&init_unique, 0);
		init = 1;
		rings = ask_for_rings(iov, count);
		ask_for_passthrough(iov, count);
	}
	n = writev(fd, iov, count);
	/* the kernel has applied INIT once its reply is written */
	if (init && n >= 0)
		uring_slots_set_conn_rings(rings ? CONN_RINGS_USED : CONN_RINGS_UNUSED);
	if (init && n >= 0 && on_init_answered)
		on_init_answered();
	if (rings && n >= 0)
		start_rings(0);
	return n;
}

int transport_attach(struct fuse_session *se, enum transport_mode m, unsigned threads,
		     const char *mountpoint, int resumed, int executed, void (*init_answered)(void))
{
	static const struct fuse_custom_io io = { .read = transport_read,
						  .writev = transport_writev };
	int allowed = uring_allowed();

	/* A server that was executed without its mount's shared buffers has
	 * buffers of its own: the requests a dead one had taken would wait for
	 * ever, and a first one keeps to /dev/fuse. A resumed one starts its
	 * rings all the same: the connection may use them already. */
	mode = executed && !shared && !resumed && m == URING_AUTO ? URING_OFF : m;
	session = se;
	on_init_answered = init_answered;
	passthrough_set_fd(fuse_session_fd(se));
	per_queue = threads;
	mount_path = mountpoint;
	if (mode != m)
		snprintf(described, sizeof(described),
			 "/dev/fuse (uring=auto: a handed-over mount without shared buffers)");
	else if (m == URING_OFF)
		snprintf(described, sizeof(described), "/dev/fuse (uring=off)");
	else if (allowed <= 0)
		snprintf(described, sizeof(described), "/dev/fuse (io_uring not allowed: %s)",
			 allowed < 0 ? "not in this kernel" : URING_PARAM " is N");
	else if (!resumed)
		snprintf(described, sizeof(described), "io_uring once INIT accepts it");
	return fuse_session_custom_io(se, &io, fuse_session_fd(se)) ? -1 : 0;
}

/* Tried whatever enable_uring says now: a connection that used io_uring keeps
 * it (the kernel allows its rings again), and its queues would hold every
 * request for ever without them. Never on one whose INIT chose /dev/fuse:
 * the kernel takes rings there while enable_uring is Y, and refuses their
 * commits once it is N. */
void transport_resume(void)
{
	if (mode != URING_OFF && uring_slots_conn_rings() != CONN_RINGS_UNUSED)
		start_rings(1);
}

const char *transport_describe(void)
{
	return described;
}

int transport_begin_wait(void)
{
	if (!drain_wait_begin())
		return 0;
	if (uring_begin_wait())
		return 1;
	drain_wait_end();
	return 0;
}

void transport_end_wait(void)
{
	uring_end_wait();
	drain_wait_end();
}

void transport_detach(void)
{
	uring_stop();
}
