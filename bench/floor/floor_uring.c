/* floor_uring [-f] [--calls PID] MOUNTPOINT: the floor of a FUSE read over
 * FUSE-over-io_uring (issue 11).
 *
 * The same file as floor_libfuse.c (/stat, ~300 bytes from memory, direct I/O),
 * served on the raw protocol without libfuse: mount(2) on an open /dev/fuse, INIT
 * answered over /dev/fuse with FUSE_OVER_IO_URING, then one queue per possible CPU,
 * each a thread pinned to its CPU with its own SQE128 ring of entries registered with
 * FUSE_IO_URING_CMD_REGISTER and answered with FUSE_IO_URING_CMD_COMMIT_AND_FETCH. The
 * kernel queues a request on the queue of the CPU that made it, so the pinned thread
 * answers without waking the other vCPU. The main thread keeps reading /dev/fuse:
 * FORGET and INTERRUPT still arrive there (and anything else, should the ring fall
 * back). Needs root and `echo Y > /sys/module/fuse/parameters/enable_uring`.
 *
 * With --calls PID each READ also makes the system calls procfast makes for a
 * pread by a caller in its own context (bench/syscalls.sh): capget and a
 * readlinkat of the caller's ns/user, then a pread of /proc/PID/stat kept open,
 * whose bytes it answers. What separates procfast from this server is then
 * procfast's own code, not the kernel's work (bench/placement.sh).
 *
 * Stays in the foreground (-f is accepted, for libfuse's convention). On SIGTERM,
 * SIGINT or SIGHUP it unmounts and exits, printing what each transport served.
 * bench/floor.sh measures procfast against it; it is not part of procfast. */
#define _GNU_SOURCE
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/fuse.h>
#include <liburing.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "fs/transport/fuse_uring_abi.h"

#define FLOOR_MINOR 42 /* the protocol this server speaks: 7.42, io_uring's */
#define STAT_INO 2
#define STAT_NAME "stat"
#define DEPTH 8 /* entries per queue: a reader, and RELEASEs in the background */
/* As libfuse 3.14 replies by default: 128 KiB writes, 32 pages a request. The
 * kernel wants payload buffers of max(8 KiB, max_write, max_pages pages). */
#define MAX_WRITE (128 * 1024)
#define MAX_PAGES 32
#define PAYLOAD_SZ MAX_WRITE
#define DEV_BUF_SZ (MAX_WRITE + 4096) /* a /dev/fuse read: header + write_in + data */
#define NO_REPLY INT_MIN /* FORGET, INTERRUPT: the kernel waits for nothing */
#define TIMEOUT_S 86400 /* names and attributes: cached, as in floor_libfuse.c */

#include "floor_text.h"

/* One request, whichever transport brought it. */
struct request {
	const struct fuse_in_header *in;
	const void *arg; /* the opcode's fixed argument */
	const char *rest; /* what follows it: LOOKUP's name */
	size_t rest_len;
	char *out; /* the reply's body; may be where rest lies (the ring's payload) */
	size_t out_cap;
};

struct entry {
	struct fuse_uring_req_header hdr;
	char *payload;
	struct iovec iov[2]; /* read by the kernel at REGISTER */
};

struct queue {
	int qid;
	pthread_t thread;
	struct io_uring ring;
	atomic_ulong served;
	struct entry ent[DEPTH];
};

static const char *mountpoint;
static int dev_fd = -1;
/* --calls: /proc, and the file each READ answers from (-1: the fixed text) */
static int proc_fd = -1, source_fd = -1;
static volatile sig_atomic_t stop_signal;
static atomic_ulong dev_served;
static int nr_queues;
static struct queue *queues;
/* Each queue thread posts once its REGISTERs were accepted (or it failed). */
static pthread_mutex_t start_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t start_cond = PTHREAD_COND_INITIALIZER;
static int started, start_failed;

/* A queue that cannot serve would leave the mount hanging or falling back to
 * /dev/fuse, and the floor measured would not be io_uring's: end it all. */
static _Noreturn void die(const char *what, int err)
{
	fprintf(stderr, "floor_uring: %s: %s\n", what, strerror(err));
	if (mountpoint)
		umount2(mountpoint, MNT_DETACH);
	exit(1);
}

/* ---- the file system: the same answers on both transports ---- */

static void fill_attr(uint64_t ino, struct fuse_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->ino = ino;
	a->blksize = 4096;
	if (ino == FUSE_ROOT_ID) {
		a->mode = S_IFDIR | 0555;
		a->nlink = 2;
	} else {
		/* Size 0, as procfs and procfast report: direct I/O reads past it. */
		a->mode = S_IFREG | 0444;
		a->nlink = 1;
	}
}

static int known(uint64_t ino)
{
	return ino == FUSE_ROOT_ID || ino == STAT_INO;
}

static int do_lookup(struct request *r)
{
	struct fuse_entry_out *e = (void *)r->out;

	/* The name is read before the reply overwrites it. */
	if (r->in->nodeid != FUSE_ROOT_ID || !memchr(r->rest, 0, r->rest_len) ||
	    strcmp(r->rest, STAT_NAME))
		return -ENOENT;
	memset(e, 0, sizeof(*e));
	e->nodeid = STAT_INO;
	e->entry_valid = e->attr_valid = TIMEOUT_S;
	fill_attr(STAT_INO, &e->attr);
	return sizeof(*e);
}

static int do_getattr(struct request *r)
{
	struct fuse_attr_out *a = (void *)r->out;

	if (!known(r->in->nodeid))
		return -ENOENT;
	memset(a, 0, sizeof(*a));
	a->attr_valid = TIMEOUT_S;
	fill_attr(r->in->nodeid, &a->attr);
	return sizeof(*a);
}

static int do_open(struct request *r, int dir)
{
	const struct fuse_open_in *oi = r->arg;
	struct fuse_open_out *o = (void *)r->out;

	if (dir != (r->in->nodeid == FUSE_ROOT_ID))
		return dir ? -ENOTDIR : -EISDIR;
	if (!dir && (oi->flags & O_ACCMODE) != O_RDONLY)
		return -EACCES;
	memset(o, 0, sizeof(*o));
	/* Every read reaches the server, as procfast's files must. */
	o->open_flags = dir ? 0 : FOPEN_DIRECT_IO;
	return sizeof(*o);
}

/* procfast's work for a pread by a caller in its own context: the caller's
 * capabilities, whether its user namespace is the daemon's, the source read. */
static int read_source(struct request *r, const struct fuse_read_in *ri)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, (int)r->in->pid };
	struct __user_cap_data_struct caps[2];
	char path[32], link[64];
	size_t n = ri->size < r->out_cap ? ri->size : r->out_cap;
	ssize_t got;

	syscall(SYS_capget, &h, caps);
	snprintf(path, sizeof(path), "%u/ns/user", r->in->pid);
	if (readlinkat(proc_fd, path, link, sizeof(link)) < 0)
		return -errno;
	got = pread(source_fd, r->out, n, (off_t)ri->offset);
	return got < 0 ? -errno : (int)got;
}

static int do_read(struct request *r)
{
	const struct fuse_read_in *ri = r->arg;
	size_t len = sizeof(text) - 1, n;

	if (source_fd >= 0)
		return read_source(r, ri);
	if (ri->offset >= len)
		return 0;
	n = len - ri->offset;
	if (n > ri->size)
		n = ri->size;
	if (n > r->out_cap)
		n = r->out_cap;
	memcpy(r->out, text + ri->offset, n);
	return (int)n;
}

/* Entries ".", "..", "stat"; the offset of an entry is its index + 1. */
static int do_readdir(struct request *r)
{
	static const char *const names[] = { ".", "..", STAT_NAME };
	const struct fuse_read_in *ri = r->arg;
	size_t used = 0, cap = ri->size < r->out_cap ? ri->size : r->out_cap;

	for (uint64_t i = ri->offset; i < 3; i++) {
		size_t namelen = strlen(names[i]);
		size_t n = FUSE_DIRENT_ALIGN(FUSE_NAME_OFFSET + namelen);
		struct fuse_dirent *d = (void *)(r->out + used);

		if (n > cap - used)
			break;
		memset(d, 0, n);
		d->ino = i == 2 ? STAT_INO : FUSE_ROOT_ID;
		d->off = i + 1;
		d->namelen = (uint32_t)namelen;
		d->type = i == 2 ? DT_REG : DT_DIR;
		memcpy(d->name, names[i], namelen);
		used += n;
	}
	return (int)used;
}

/* The body's length, -errno, or NO_REPLY. */
static int handle(struct request *r)
{
	switch (r->in->opcode) {
	case FUSE_LOOKUP:
		return do_lookup(r);
	case FUSE_GETATTR:
		return do_getattr(r);
	case FUSE_OPEN:
		return do_open(r, 0);
	case FUSE_OPENDIR:
		return do_open(r, 1);
	case FUSE_READ:
		return do_read(r);
	case FUSE_READDIR:
		return do_readdir(r);
	case FUSE_RELEASE:
	case FUSE_RELEASEDIR:
	case FUSE_DESTROY:
		return 0;
	case FUSE_FORGET:
	case FUSE_BATCH_FORGET:
	case FUSE_INTERRUPT: /* every request is answered at once: nothing to stop */
		return NO_REPLY;
	default: /* FLUSH too, as floor_libfuse: the kernel stops sending it */
		return -ENOSYS;
	}
}

/* ---- /dev/fuse ---- */

static void dev_reply(uint64_t unique, int res, const void *body)
{
	struct fuse_out_header oh = { .unique = unique, .error = res < 0 ? res : 0 };
	struct iovec iov[2] = { { &oh, sizeof(oh) }, { (void *)body, res > 0 ? (size_t)res : 0 } };

	oh.len = (uint32_t)(sizeof(oh) + iov[1].iov_len);
	/* ENOENT: the request was interrupted meanwhile; nothing to do. */
	if (writev(dev_fd, iov, 2) < 0 && errno != ENOENT)
		fprintf(stderr, "floor_uring: reply to /dev/fuse: %s\n", strerror(errno));
}

/* The opcode's fixed argument's size, over /dev/fuse (the ring has it apart). */
static size_t arg_size(uint32_t opcode)
{
	switch (opcode) {
	case FUSE_GETATTR:
		return sizeof(struct fuse_getattr_in);
	case FUSE_OPEN:
	case FUSE_OPENDIR:
		return sizeof(struct fuse_open_in);
	case FUSE_READ:
	case FUSE_READDIR:
		return sizeof(struct fuse_read_in);
	case FUSE_RELEASE:
	case FUSE_RELEASEDIR:
		return sizeof(struct fuse_release_in);
	default:
		return 0;
	}
}

static void dev_request(char *buf, size_t len, char *out)
{
	const struct fuse_in_header *in = (void *)buf;
	size_t asz = arg_size(in->opcode);
	struct request r = { .in = in, .arg = buf + sizeof(*in), .out = out,
			     .out_cap = PAYLOAD_SZ };
	int res;

	if (len < sizeof(*in) + asz) {
		dev_reply(in->unique, -EINVAL, NULL);
		return;
	}
	r.rest = buf + sizeof(*in) + asz;
	r.rest_len = len - sizeof(*in) - asz;
	res = handle(&r);
	atomic_fetch_add_explicit(&dev_served, 1, memory_order_relaxed);
	if (res != NO_REPLY)
		dev_reply(in->unique, res, out);
}

static uint64_t init_flags(const struct fuse_init_in *ii)
{
	uint64_t f = ii->flags;

	if (f & FUSE_INIT_EXT)
		f |= (uint64_t)ii->flags2 << 32;
	return f;
}

/* Answers INIT, asking for io_uring; the kernel offers it only when enable_uring. */
static void do_init(int fd)
{
	static char buf[DEV_BUF_SZ];
	const struct fuse_in_header *in = (void *)buf;
	const struct fuse_init_in *ii = (void *)(buf + sizeof(*in));
	struct fuse_init_out o = { .major = FUSE_KERNEL_VERSION, .max_background = 16,
				   .congestion_threshold = 12, .max_write = MAX_WRITE,
				   .time_gran = 1, .max_pages = MAX_PAGES };
	ssize_t n = read(fd, buf, sizeof(buf));
	uint64_t want = FUSE_ASYNC_READ | FUSE_BIG_WRITES | FUSE_MAX_PAGES | FUSE_INIT_EXT |
			FUSE_OVER_IO_URING;

	if (n < 0)
		die("read INIT", errno);
	if ((size_t)n < sizeof(*in) + sizeof(*ii) || in->opcode != FUSE_INIT ||
	    ii->major != FUSE_KERNEL_VERSION)
		die("first request is no INIT of protocol 7", EPROTO);
	if (!(init_flags(ii) & FUSE_OVER_IO_URING))
		die("the kernel offers no FUSE_OVER_IO_URING (is "
		    "/sys/module/fuse/parameters/enable_uring Y?)", EOPNOTSUPP);
	want &= init_flags(ii);
	o.minor = ii->minor < FLOOR_MINOR ? ii->minor : FLOOR_MINOR;
	o.max_readahead = ii->max_readahead;
	o.flags = (uint32_t)want;
	o.flags2 = (uint32_t)(want >> 32);
	dev_reply(in->unique, sizeof(o), &o);
}

/* Serves /dev/fuse until a signal or the end of the connection. The signals are
 * blocked but in ppoll, so that one arriving between two reads is not lost. */
static void dev_loop(const sigset_t *waitmask)
{
	static char buf[DEV_BUF_SZ], out[PAYLOAD_SZ];
	struct pollfd p = { .fd = dev_fd, .events = POLLIN };

	while (!stop_signal) {
		ssize_t n;

		if (ppoll(&p, 1, NULL, waitmask) < 0) {
			if (errno == EINTR)
				continue;
			die("ppoll /dev/fuse", errno);
		}
		n = read(dev_fd, buf, sizeof(buf));
		if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == ENOENT))
			continue;
		if (n < 0 && errno == ENODEV) /* unmounted */
			return;
		if (n < 0)
			die("read /dev/fuse", errno);
		dev_request(buf, (size_t)n, out);
	}
}

/* ---- the ring queues ---- */

static void prep_cmd(struct queue *q, struct entry *e, uint32_t cmd, uint64_t commit_id)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&q->ring);
	struct fuse_uring_cmd_req *req;

	/* One SQE per entry, and at most DEPTH entries out: never NULL. */
	if (!sqe)
		die("no free SQE", EBUSY);
	memset(sqe, 0, 128); /* SQE128: the command area is the second half */
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->flags = IOSQE_FIXED_FILE;
	sqe->fd = 0; /* /dev/fuse, registered */
	sqe->cmd_op = cmd;
	if (cmd == FUSE_IO_URING_CMD_REGISTER) {
		sqe->addr = (uintptr_t)e->iov;
		sqe->len = 2;
	}
	req = (void *)sqe->cmd;
	req->qid = (uint16_t)q->qid;
	req->commit_id = commit_id;
	io_uring_sqe_set_data(sqe, e);
}

/* Answers the request the kernel put in E, and hands E back for the next. */
static void ring_request(struct queue *q, struct entry *e)
{
	struct fuse_in_header in = *(struct fuse_in_header *)e->hdr.in_out;
	struct fuse_uring_ent_in_out *io = &e->hdr.ring_ent_in_out;
	uint64_t commit_id = io->commit_id;
	struct request r = { .in = &in, .arg = e->hdr.op_in, .rest = e->payload,
			     .rest_len = io->payload_sz, .out = e->payload,
			     .out_cap = PAYLOAD_SZ };
	struct fuse_out_header *oh = (void *)e->hdr.in_out;
	int res = handle(&r);

	/* Only /dev/fuse brings what needs no reply; the entry must be committed. */
	if (res == NO_REPLY)
		res = -ENOSYS;
	memset(oh, 0, sizeof(*oh));
	oh->unique = in.unique;
	oh->error = res < 0 ? res : 0;
	oh->len = (uint32_t)(sizeof(*oh) + (res > 0 ? (size_t)res : 0));
	io->flags = 0;
	io->payload_sz = res > 0 ? (uint32_t)res : 0;
	atomic_fetch_add_explicit(&q->served, 1, memory_order_relaxed);
	prep_cmd(q, e, FUSE_IO_URING_CMD_COMMIT_AND_FETCH, commit_id);
}

static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	/* A possible CPU may be offline: its queue then runs anywhere. */
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

static void started_one(int failed)
{
	pthread_mutex_lock(&start_lock);
	started++;
	start_failed |= failed;
	pthread_cond_broadcast(&start_cond);
	pthread_mutex_unlock(&start_lock);
}

/* Registers every entry. An error comes back at once, a success only with the
 * first request: so a completion already there after the submit is a failure. */
static int register_queue(struct queue *q)
{
	struct io_uring_cqe *cqe;
	int err;

	err = io_uring_queue_init(DEPTH, &q->ring, IORING_SETUP_SQE128);
	if (err < 0)
		return err;
	err = io_uring_register_files(&q->ring, &dev_fd, 1);
	if (err < 0)
		return err;
	for (int i = 0; i < DEPTH; i++) {
		struct entry *e = &q->ent[i];

		e->payload = aligned_alloc(4096, PAYLOAD_SZ);
		if (!e->payload)
			return -ENOMEM;
		e->iov[0] = (struct iovec){ &e->hdr, sizeof(e->hdr) };
		e->iov[1] = (struct iovec){ e->payload, PAYLOAD_SZ };
		prep_cmd(q, e, FUSE_IO_URING_CMD_REGISTER, 0);
	}
	err = io_uring_submit(&q->ring);
	if (err < 0)
		return err;
	if (io_uring_peek_cqe(&q->ring, &cqe) == 0 && cqe->res < 0)
		return cqe->res;
	return 0;
}

/* A completion: a request in its entry, or the end of the connection. */
static int ring_completion(struct queue *q, struct io_uring_cqe *cqe)
{
	if (cqe->res == -ENOTCONN || cqe->res == -ECANCELED)
		return 0; /* unmounted: the kernel hands the entries back */
	if (cqe->res < 0)
		die("ring command", -cqe->res);
	ring_request(q, io_uring_cqe_get_data(cqe));
	return 1;
}

static void *queue_main(void *arg)
{
	struct queue *q = arg;
	int err, live = DEPTH;

	pin(q->qid);
	err = register_queue(q);
	started_one(err < 0);
	if (err < 0)
		die("register a ring queue", -err);
	while (live > 0) {
		struct io_uring_cqe *cqe;
		unsigned head, seen = 0;

		err = io_uring_submit_and_wait(&q->ring, 1);
		if (err < 0 && err != -EINTR)
			die("io_uring_submit_and_wait", -err);
		io_uring_for_each_cqe(&q->ring, head, cqe) {
			live -= !ring_completion(q, cqe);
			seen++;
		}
		io_uring_cq_advance(&q->ring, seen);
	}
	return NULL;
}

/* The kernel makes a queue per possible CPU and serves none until all registered. */
static int possible_cpus(void)
{
	FILE *f = fopen("/sys/devices/system/cpu/possible", "re");
	char line[256], *p = line;
	long max = -1;

	if (!f || !fgets(line, sizeof(line), f)) {
		if (f)
			fclose(f);
		return (int)sysconf(_SC_NPROCESSORS_CONF);
	}
	fclose(f);
	/* "0-1" or "0,2-3": the largest number names the last CPU. */
	while (*p) {
		char *end;
		long n;

		if (*p < '0' || *p > '9') { /* not strtol's: "-1" is a range's end */
			p++;
			continue;
		}
		n = strtol(p, &end, 10);
		if (n > max)
			max = n;
		p = end;
	}
	return max < 0 ? (int)sysconf(_SC_NPROCESSORS_CONF) : (int)max + 1;
}

static void start_queues(void)
{
	nr_queues = possible_cpus();
	queues = calloc((size_t)nr_queues, sizeof(*queues));
	if (!queues)
		die("calloc", ENOMEM);
	for (int i = 0; i < nr_queues; i++) {
		int err;

		queues[i].qid = i;
		err = pthread_create(&queues[i].thread, NULL, queue_main, &queues[i]);
		if (err)
			die("pthread_create", err);
	}
	pthread_mutex_lock(&start_lock);
	while (started < nr_queues)
		pthread_cond_wait(&start_cond, &start_lock);
	pthread_mutex_unlock(&start_lock);
}

/* ---- setup and teardown ---- */

static void on_signal(int sig)
{
	stop_signal = sig;
}

/* SIGTERM, SIGINT and SIGHUP blocked from here on (the queue threads inherit
 * that), caught only inside dev_loop's ppoll; returns the mask for ppoll. */
static sigset_t block_signals(void)
{
	struct sigaction sa = { .sa_handler = on_signal };
	sigset_t set, old;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &set, &old);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	return old;
}

static void mount_floor(void)
{
	char opts[128];

	dev_fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
	if (dev_fd < 0)
		die("open /dev/fuse", errno);
	snprintf(opts, sizeof(opts), "fd=%d,rootmode=40000,user_id=0,group_id=0", dev_fd);
	if (mount("floor", mountpoint, "fuse.floor", MS_NOSUID | MS_NODEV, opts) < 0) {
		int err = errno;

		mountpoint = NULL; /* not ours to unmount */
		die("mount", err);
	}
}

static void unmount_floor(void)
{
	/* Busy (a reader still in it): detach, the connection ends with the last user. */
	if (umount2(mountpoint, 0) < 0 && errno != EINVAL)
		umount2(mountpoint, MNT_DETACH);
}

static void report(void)
{
	unsigned long ring = 0;

	for (int i = 0; i < nr_queues; i++)
		ring += atomic_load(&queues[i].served);
	fprintf(stderr, "floor_uring: served %lu requests over io_uring (%d queues), %lu over "
		"/dev/fuse\n", ring, nr_queues, atomic_load(&dev_served));
}

int main(int argc, char **argv)
{
	sigset_t waitmask;
	int i = 1;

	if (i < argc && !strcmp(argv[i], "-f"))
		i++;
	if (i + 1 < argc && !strcmp(argv[i], "--calls")) {
		char path[64];

		snprintf(path, sizeof(path), "/proc/%s/stat", argv[i + 1]);
		proc_fd = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
		source_fd = open(path, O_RDONLY | O_CLOEXEC);
		if (proc_fd < 0 || source_fd < 0)
			die(path, errno);
		i += 2;
	}
	if (argc != i + 1) {
		fprintf(stderr, "usage: %s [-f] [--calls PID] MOUNTPOINT\n", argv[0]);
		return 2;
	}
	mountpoint = argv[i];
	waitmask = block_signals();
	mount_floor();
	do_init(dev_fd);
	start_queues();
	if (start_failed)
		die("a queue did not start", EIO);
	fprintf(stderr, "floor_uring: serving %s, %d queues of %d\n", mountpoint, nr_queues, DEPTH);
	dev_loop(&waitmask);
	unmount_floor();
	report();
	/* Exiting hands the ring commands back to the kernel (IO_URING_F_CANCEL). */
	return 0;
}
