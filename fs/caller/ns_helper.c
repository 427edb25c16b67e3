#include "fs/caller/ns_helper.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/capability.h>

#include "fs/caller/caller.h"
#include "fs/caller/reader_ns.h"
#include "fs/lib/cleanup.h"
#include "fs/lib/clock.h"
#include "fs/lib/log.h"
#include "fs/lib/proc_fields.h"
#include "fs/lib/procfile.h"

/* The kinds a helper enters, in the order it enters them: the user
 * namespace last, while the daemon's capabilities still count. */
static const enum reader_ns_kind helper_kinds[] = { RNS_NET, RNS_UTS, RNS_IPC, RNS_CGROUP,
						    RNS_TIME, RNS_USER };
#define NKINDS (sizeof(helper_kinds) / sizeof(helper_kinds[0]))

/* Replies carry at most this much: procfs itself reads a page or a few at
 * a time, and callers read on after a short read. */
#define HELPER_IO_MAX (64 * 1024)
#define HELPER_IDLE_NS (30ULL * 1000000000ULL)
#define MAX_HELPERS 16
#define MAKER_END_MS 2000

/* OPEN opens and closes (open's answer); READ and WRITE open, act at the
 * offset and close; OPEN_DIR opens and hands the directory back; STAT,
 * READLINK and ACCESS are fstatat, readlinkat and faccessat (ACCESS's mode
 * in off). */
enum helper_op { OP_OPEN, OP_READ, OP_WRITE, OP_OPEN_DIR, OP_STAT, OP_READLINK, OP_ACCESS };

/* The ops whose answer carries bytes back. */
static int returns_bytes(int op)
{
	return op == OP_READ || op == OP_STAT || op == OP_READLINK;
}

struct helper_req {
	int op;
	int flags;
	pid_t tid;
	uint32_t size;
	int64_t off;
	char path[PATH_MAX];
};

struct helper_reply {
	int64_t result; /* bytes, or -errno */
};

/* --- both sides ------------------------------------------------------------ */

static int send_iov_with_fds(int sock, struct iovec *iov, int niov, const int *fds, int nfds)
{
	char cbuf[CMSG_SPACE(sizeof(int) * (NKINDS + 1))] = { 0 };
	struct msghdr m = { .msg_iov = iov, .msg_iovlen = (size_t)niov };

	if (nfds) {
		struct cmsghdr *c;

		m.msg_control = cbuf;
		m.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
		c = CMSG_FIRSTHDR(&m);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)nfds);
	}
	return sendmsg(sock, &m, MSG_NOSIGNAL) < 0 ? -errno : 0;
}

static int send_with_fds(int sock, const void *msg, size_t len, const int *fds, int nfds)
{
	struct iovec iov = { .iov_base = (void *)msg, .iov_len = len };

	return send_iov_with_fds(sock, &iov, 1, fds, nfds);
}

/* --- the helper: one process in one caller's namespaces --------------------- */

static int helper_srcfd = -1, helper_selfproc = -1;

/* The caller's ids and capabilities as this namespace sees them: its
 * effective and fs ids, groups and effective capabilities (fs/caller/caller.h
 * says why not its real and saved ids). */
static int become(pid_t tid)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, tid };
	struct __user_cap_data_struct d[2] = { { 0 } };
	struct __user_cap_header_struct self = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct full[2] = { { ~0u, ~0u, 0 }, { ~0u, ~0u, 0 } };
	struct __user_cap_data_struct own[2] = { { 0 } };
	struct task_ids ids;
	gid_t groups[256];
	char status[4096];
	int ngroups;

	if (procfile_read(helper_selfproc, tid, "status", status, sizeof(status)) <= 0 ||
	    status_ids(status, &ids) || syscall(SYS_capget, &h, d))
		return -EPERM;
	ngroups = status_groups(status, groups, 256);
	/* back to every capability of the namespace first, then down to the
	 * caller's: ids need CAP_SETUID/SETGID */
	if (syscall(SYS_capget, &self, own))
		return -EPERM;
	full[0].permitted = full[0].effective = own[0].permitted;
	full[1].permitted = full[1].effective = own[1].permitted;
	if (syscall(SYS_capset, &self, full))
		return -EPERM;
	/* A namespace that denies setgroups (/proc/PID/setgroups) leaves the
	 * helper its own groups: none (main.c), never more than the caller's. */
	if (syscall(SYS_setgroups, (size_t)ngroups, groups) && errno != EPERM)
		return -EPERM;
	if (caller_ids_set(ids.uid[IDS_EFFECTIVE], ids.uid[IDS_FS], ids.gid[IDS_EFFECTIVE],
			   ids.gid[IDS_FS]))
		return errno == EINVAL ? -EOVERFLOW : -EPERM; /* not mapped here */
	own[0].effective = d[0].effective & own[0].permitted;
	own[1].effective = d[1].effective & own[1].permitted;
	return syscall(SYS_capset, &self, own) ? -EPERM : 0;
}

static int open_flags(const struct helper_req *r)
{
	return r->flags | O_CLOEXEC | O_NOCTTY;
}

/* The ops made on a path, without opening it. */
static ssize_t path_op(const struct helper_req *r, char *buf)
{
	struct stat st;
	ssize_t n;

	switch (r->op) {
	case OP_STAT:
		if (fstatat(helper_srcfd, r->path, &st, r->flags))
			return -errno;
		memcpy(buf, &st, sizeof(st));
		return sizeof(st);
	case OP_READLINK:
		n = readlinkat(helper_srcfd, r->path, buf, r->size);
		return n < 0 ? -errno : n;
	case OP_ACCESS:
		return faccessat(helper_srcfd, r->path, (int)r->off, r->flags) ? -errno : 0;
	}
	return -EINVAL;
}

/* One request as its caller; an OPEN_DIR's directory into *handed. */
static ssize_t do_request(const struct helper_req *r, char *buf, int *handed)
{
	__do_close int fd = -1;
	ssize_t n;
	int e;

	if ((e = become(r->tid)))
		return e;
	if (r->op == OP_STAT || r->op == OP_READLINK || r->op == OP_ACCESS)
		return path_op(r, buf);
	fd = openat(helper_srcfd, r->path, open_flags(r));
	if (fd < 0)
		return -errno;
	switch (r->op) {
	case OP_OPEN:
		return 0;
	case OP_OPEN_DIR:
		/* Some listings ask as they go (map_files: ptrace, after the dots),
		 * which the server would pass as itself: a whole listing here
		 * decides for the caller, then the server lists from the start. */
		while ((n = syscall(SYS_getdents64, fd, buf, HELPER_IO_MAX)) > 0)
			;
		if (n < 0 || lseek(fd, 0, SEEK_SET) < 0)
			return -errno;
		*handed = fd;
		fd = -1;
		return 0;
	case OP_READ:
		n = pread(fd, buf, r->size, r->off);
		if (n < 0 && errno == ESPIPE)
			n = read(fd, buf, r->size);
		return n < 0 ? -errno : n;
	case OP_WRITE:
		n = pwrite(fd, buf, r->size, r->off);
		if (n < 0 && errno == ESPIPE)
			n = write(fd, buf, r->size);
		return n < 0 ? -errno : n;
	}
	return -EINVAL;
}

static void helper_serve(int sock)
{
	static char buf[HELPER_IO_MAX];
	struct helper_req r;

	for (;;) {
		struct iovec in[2] = { { &r, offsetof(struct helper_req, path) + PATH_MAX },
				       { buf, sizeof(buf) } };
		struct msghdr m = { .msg_iov = in, .msg_iovlen = 2 };
		ssize_t got = recvmsg(sock, &m, 0), n;
		struct helper_reply rep;
		int handed = -1;

		if (got <= 0)
			_exit(0); /* the server is gone */
		if ((size_t)got < offsetof(struct helper_req, path) + 1 || r.size > HELPER_IO_MAX) {
			rep.result = -EINVAL;
			n = 0;
		} else {
			r.path[PATH_MAX - 1] = '\0';
			n = do_request(&r, buf, &handed);
			rep.result = n;
		}
		struct iovec out[2] = { { &rep, sizeof(rep) },
					{ buf, returns_bytes(r.op) && n > 0 ? (size_t)n : 0 } };

		if (send_iov_with_fds(sock, out, 2, &handed, handed >= 0))
			_exit(0);
		if (handed >= 0)
			close(handed);
	}
}

/* Enters the namespaces whose files came (fds[i] >= 0 for helper_kinds[i]);
 * then, in its own user namespace, becomes that namespace's root, so that it
 * holds no more than the container's root does. */
static int helper_enter(const int *fds)
{
	for (size_t i = 0; i < NKINDS; i++)
		if (fds[i] >= 0 && setns(fds[i], reader_ns_type(helper_kinds[i])))
			return -errno;
	if (fds[NKINDS - 1] >= 0) {
		prctl(PR_SET_KEEPCAPS, 1);
		if (setresgid(0, 0, 0) == 0)
			setresuid(0, 0, 0); /* where the namespace maps a root */
	}
	return 0;
}

static void helper_main(int sock, const int *fds)
{
	int ok;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	signal(SIGTERM, SIG_DFL); /* the maker's end is ours */
	ok = helper_enter(fds) == 0;
	for (size_t i = 0; i < NKINDS; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	/* tell the server whether it worked: one byte */
	if (send(sock, ok ? "y" : "n", 1, MSG_NOSIGNAL) != 1 || !ok)
		_exit(1);
	helper_serve(sock);
}

/* --- the maker: forked before any thread, forks helpers ------------------- */

struct make_msg {
	unsigned present; /* bit i: a file for helper_kinds[i] follows */
};

/* The server is done (its end of the socket closed): the helpers end
 * first, those it still held too, so that none outlives the daemon holding
 * its source open (a procfs mount of a container's would stay busy). The
 * maker and its helpers are a process group of their own, in which only
 * the maker ignores SIGTERM; with SIGCHLD ignored, wait() returns once
 * every child has ended. */
static void __attribute__((noreturn)) maker_end(void)
{
	if (getpgrp() == getpid()) /* never the server's group */
		kill(0, SIGTERM);
	while (wait(NULL) >= 0 || errno == EINTR)
		;
	_exit(0);
}

static void maker_loop(int sock)
{
	for (;;) {
		char cbuf[CMSG_SPACE(sizeof(int) * (NKINDS + 1))];
		struct make_msg msg;
		struct iovec iov = { &msg, sizeof(msg) };
		struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
				    .msg_controllen = sizeof(cbuf) };
		int fds[NKINDS + 1], got[NKINDS + 1], n = 0, k = 0;
		struct cmsghdr *c;

		if (recvmsg(sock, &m, MSG_CMSG_CLOEXEC) <= 0)
			maker_end();
		c = CMSG_FIRSTHDR(&m);
		if (c && c->cmsg_type == SCM_RIGHTS)
			n = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		if (n > 0)
			memcpy(got, CMSG_DATA(c), sizeof(int) * (size_t)n);
		/* got[0] is the helper's socket, then one file per present kind */
		for (size_t i = 0; i < NKINDS; i++)
			fds[i] = (msg.present & (1u << i)) && 1 + k < n ? got[1 + k++] : -1;
		if (n > 0 && fork() == 0) {
			close(sock);
			helper_main(got[0], fds);
		}
		for (int i = 0; i < n; i++)
			close(got[i]);
	}
}

/* Keeps only the fds a helper needs, at fixed numbers: the maker is forked
 * from a server holding its FUSE session and sockets. */
static int keep_only(int sock, int srcfd, int selfproc)
{
	int a = fcntl(sock, F_DUPFD_CLOEXEC, 100), b = fcntl(srcfd, F_DUPFD_CLOEXEC, 100),
	    c = fcntl(selfproc, F_DUPFD_CLOEXEC, 100);

	if (a < 0 || b < 0 || c < 0 || dup2(a, 3) < 0 || dup2(b, 4) < 0 || dup2(c, 5) < 0)
		return -1;
	return syscall(SYS_close_range, 6, ~0U, 0) ? -1 : 0;
}

static void maker_main(int sock, int srcfd, int selfproc)
{
	prctl(PR_SET_NAME, NS_HELPER_COMM); /* helpers inherit it */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	prctl(PR_SET_DUMPABLE, 0);
	signal(SIGCHLD, SIG_IGN); /* helpers are reaped by the kernel */
	signal(SIGTERM, SIG_IGN); /* maker_end's, for its helpers */
	setpgid(0, 0);
	signal(SIGINT, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	if (keep_only(sock, srcfd, selfproc))
		_exit(1);
	helper_srcfd = 4;
	helper_selfproc = 5;
	maker_loop(3);
}

/* --- the server's side ------------------------------------------------------ */

struct ns_helper {
	unsigned long ino[NKINDS]; /* the namespaces it is in (0: the daemon's) */
	int sock;
	int refs;                  /* the table's one, and one per user */
	uint64_t used_ns;
	atomic_bool dead;          /* it stopped answering: the next caller makes another */
	pthread_mutex_t lock;      /* one request at a time */
};

static int maker = -1;
static pid_t maker_pid;
static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ns_helper *helpers[MAX_HELPERS];

static void keep_own(void);

int ns_helper_init(int srcfd, int selfproc)
{
	int sv[2];
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv))
		return -errno;
	pid = fork();
	if (pid < 0) {
		close(sv[0]);
		close(sv[1]);
		return -errno;
	}
	if (pid == 0) {
		close(sv[0]);
		maker_main(sv[1], srcfd, selfproc);
	}
	close(sv[1]);
	maker = sv[0];
	maker_pid = pid;
	keep_own();
	return 0;
}

static void helper_free(struct ns_helper *h)
{
	close(h->sock); /* the helper reads EOF and exits */
	pthread_mutex_destroy(&h->lock);
	free(h);
}

void ns_helper_put(struct ns_helper *h)
{
	int last;

	if (!h)
		return;
	pthread_mutex_lock(&table_lock);
	h->used_ns = now_ns();
	last = --h->refs == 0;
	pthread_mutex_unlock(&table_lock);
	if (last)
		helper_free(h);
}

/* The caller's namespace of each kind, 0 where it is the daemon's; -EPERM
 * when one cannot be told. */
static int namespaces_of(pid_t tid, unsigned long *ino)
{
	for (size_t i = 0; i < NKINDS; i++) {
		ino[i] = reader_ns_of(tid, helper_kinds[i]);
		if (!ino[i] && !reader_ns_is_daemons(helper_kinds[i], 0))
			return -EPERM;
		if (reader_ns_is_daemons(helper_kinds[i], ino[i]))
			ino[i] = 0;
	}
	return 0;
}

/* Opens the caller's namespace files and has the maker fork a helper in
 * them; the helper says whether it got in. */
static struct ns_helper *spawn(pid_t tid, const unsigned long *ino)
{
	int fds[NKINDS + 1], nfds = 1, sv[2] = { -1, -1 };
	struct make_msg msg = { 0 };
	struct ns_helper *h = NULL;
	char ok = 0;

	for (size_t i = 0; i < NKINDS; i++) {
		char path[48];
		int fd;

		if (!ino[i])
			continue;
		snprintf(path, sizeof(path), "/proc/%d/%s", tid, reader_ns_file(helper_kinds[i]));
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			goto out;
		fds[nfds++] = fd;
		msg.present |= 1u << i;
	}
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv))
		goto out;
	fds[0] = sv[1];
	if (send_with_fds(maker, &msg, sizeof(msg), fds, nfds) || recv(sv[0], &ok, 1, 0) != 1 ||
	    ok != 'y' || !(h = calloc(1, sizeof(*h)))) {
		log_debug("no helper in the namespaces of %d", tid);
		goto out;
	}
	memcpy(h->ino, ino, sizeof(h->ino));
	h->sock = sv[0];
	sv[0] = -1;
	h->refs = 1;
	pthread_mutex_init(&h->lock, NULL);
out:
	for (int i = 1; i < nfds; i++)
		close(fds[i]);
	if (sv[0] >= 0)
		close(sv[0]);
	if (sv[1] >= 0)
		close(sv[1]);
	errno = EPERM;
	return h;
}

static void keep_own(void)
{
	const unsigned long none[NKINDS] = { 0 };
	struct ns_helper *h = spawn(0, none);

	if (!h)
		return; /* made at its first use then */
	h->used_ns = now_ns();
	helpers[0] = h; /* the table's reference */
}

/* The live helper in those namespaces; a dead one there leaves the table. */
static struct ns_helper *find(const unsigned long *ino, struct ns_helper **gone)
{
	for (int i = 0; i < MAX_HELPERS; i++) {
		struct ns_helper *h = helpers[i];

		if (!h || memcmp(h->ino, ino, sizeof(h->ino)))
			continue;
		if (!atomic_load(&h->dead))
			return h;
		helpers[i] = NULL;
		if (--h->refs == 0)
			*gone = h;
	}
	return NULL;
}

/* A free slot, or the one unused longest (its users keep it until done). */
static int slot_for_new(void)
{
	int best = -1;

	for (int i = 0; i < MAX_HELPERS; i++) {
		if (!helpers[i])
			return i;
		if (best < 0 || helpers[i]->used_ns < helpers[best]->used_ns)
			best = i;
	}
	return best;
}

struct ns_helper *ns_helper_get(pid_t tid)
{
	unsigned long ino[NKINDS];
	struct ns_helper *h, *old = NULL;
	int slot;

	if (maker < 0 || namespaces_of(tid, ino)) {
		errno = EPERM;
		return NULL;
	}
	pthread_mutex_lock(&table_lock);
	if ((h = find(ino, &old)))
		h->refs++;
	pthread_mutex_unlock(&table_lock);
	if (old)
		helper_free(old);
	old = NULL;
	if (h || !(h = spawn(tid, ino)))
		return h;
	pthread_mutex_lock(&table_lock);
	slot = slot_for_new();
	if (helpers[slot] && --helpers[slot]->refs == 0)
		old = helpers[slot];
	helpers[slot] = h;
	h->refs++;
	pthread_mutex_unlock(&table_lock);
	if (old)
		helper_free(old);
	return h;
}

/* The helper in the daemon's own namespaces (for its own processes): made
 * at start and kept, so that the daemon's fds at rest count it. */
static int in_daemons_namespaces(const struct ns_helper *h)
{
	for (size_t i = 0; i < NKINDS; i++)
		if (h->ino[i])
			return 0;
	return 1;
}

void ns_helper_trim(void)
{
	struct ns_helper *gone[MAX_HELPERS];
	uint64_t now = now_ns();
	int n = 0;

	pthread_mutex_lock(&table_lock);
	for (int i = 0; i < MAX_HELPERS; i++) {
		struct ns_helper *h = helpers[i];

		if (h && now - h->used_ns > HELPER_IDLE_NS && !in_daemons_namespaces(h)) {
			helpers[i] = NULL;
			if (--h->refs == 0)
				gone[n++] = h;
		}
	}
	pthread_mutex_unlock(&table_lock);
	while (n)
		helper_free(gone[--n]);
}

/* The server's stop waits for the maker (its child): once it ended, no
 * helper holds the source any more. Bounded: a helper that cannot end (in
 * an uninterruptible wait) must not hold the stop. */
static void maker_wait_end(void)
{
	__do_close int pidfd = (int)syscall(SYS_pidfd_open, maker_pid, 0);
	struct pollfd p = { .fd = pidfd, .events = POLLIN };

	if (pidfd < 0) {
		log_warn("the helpers' maker cannot be waited for (pidfd_open: %s): killed",
			 strerror(errno));
		kill(maker_pid, SIGKILL);
	} else if (poll(&p, 1, MAKER_END_MS) != 1) {
		log_warn("the helpers' maker did not end in %d ms: killed", MAKER_END_MS);
		kill(maker_pid, SIGKILL);
	}
	waitpid(maker_pid, NULL, 0);
}

void ns_helper_stop(void)
{
	for (int i = 0; i < MAX_HELPERS; i++) {
		if (helpers[i] && --helpers[i]->refs == 0)
			helper_free(helpers[i]);
		helpers[i] = NULL;
	}
	if (maker >= 0) {
		close(maker); /* the maker reads EOF, ends its helpers and exits */
		maker_wait_end();
	}
	maker = -1;
}

/* One request's arguments, and the directory an OPEN_DIR hands back. */
struct helper_call {
	int op;
	const char *path;
	int flags;
	const void *out; /* WRITE's bytes */
	char *in;        /* READ's, STAT's, READLINK's room */
	size_t size;
	off_t off;
	int fd;          /* OPEN_DIR's, else -1 */
};

/* The fd a reply carried, or -1. */
static int received_fd(struct msghdr *m)
{
	struct cmsghdr *c = CMSG_FIRSTHDR(m);
	int fd = -1;

	if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
	    c->cmsg_len == CMSG_LEN(sizeof(int)))
		memcpy(&fd, CMSG_DATA(c), sizeof(int));
	return fd;
}

static ssize_t call(struct ns_helper *h, pid_t tid, struct helper_call *a)
{
	struct helper_req r = { .op = a->op, .flags = a->flags, .tid = tid, .off = a->off };
	struct helper_reply rep;
	size_t plen = strlen(a->path) + 1, size = a->size;
	char cbuf[CMSG_SPACE(sizeof(int))];
	ssize_t got;

	if (plen > PATH_MAX)
		return -ENAMETOOLONG;
	if (size > HELPER_IO_MAX)
		size = HELPER_IO_MAX;
	r.size = (uint32_t)size;
	memcpy(r.path, a->path, plen);
	struct iovec req[2] = { { &r, offsetof(struct helper_req, path) + PATH_MAX },
				{ (void *)a->out, a->op == OP_WRITE ? size : 0 } };
	struct iovec rsp[2] = { { &rep, sizeof(rep) }, { a->in, returns_bytes(a->op) ? size : 0 } };
	struct msghdr mq = { .msg_iov = req, .msg_iovlen = 2 };
	struct msghdr mr = { .msg_iov = rsp, .msg_iovlen = 2, .msg_control = cbuf,
			     .msg_controllen = sizeof(cbuf) };

	pthread_mutex_lock(&h->lock);
	got = sendmsg(h->sock, &mq, MSG_NOSIGNAL) < 0 ? -1 : recvmsg(h->sock, &mr, MSG_CMSG_CLOEXEC);
	pthread_mutex_unlock(&h->lock);
	if (got < (ssize_t)sizeof(rep)) {
		atomic_store(&h->dead, true);
		return -ECONNRESET;
	}
	a->fd = received_fd(&mr);
	if (a->op != OP_OPEN_DIR && a->fd >= 0) { /* never: the helper hands only directories */
		close(a->fd);
		a->fd = -1;
	}
	return (ssize_t)rep.result;
}

/* A helper that died (killed, out of memory) is replaced once; never the
 * daemon's answer instead. */
static ssize_t call_retrying(struct ns_helper **h, pid_t tid, struct helper_call *a)
{
	ssize_t r = call(*h, tid, a);

	if (r != -ECONNRESET)
		return r;
	ns_helper_put(*h);
	if (!(*h = ns_helper_get(tid)))
		return -EPERM;
	r = call(*h, tid, a);
	return r == -ECONNRESET ? -EPERM : r;
}

int ns_helper_open(struct ns_helper **h, pid_t tid, const char *path, int flags)
{
	struct helper_call a = { .op = OP_OPEN, .path = path, .flags = flags, .fd = -1 };

	return (int)call_retrying(h, tid, &a);
}

ssize_t ns_helper_read(struct ns_helper **h, pid_t tid, const char *path, int flags, char *buf,
		       size_t size, off_t off)
{
	struct helper_call a = { .op = OP_READ, .path = path, .flags = flags, .in = buf,
				 .size = size, .off = off, .fd = -1 };

	return call_retrying(h, tid, &a);
}

ssize_t ns_helper_write(struct ns_helper **h, pid_t tid, const char *path, int flags,
			const char *buf, size_t size, off_t off)
{
	struct helper_call a = { .op = OP_WRITE, .path = path, .flags = flags, .out = buf,
				 .size = size, .off = off, .fd = -1 };

	return call_retrying(h, tid, &a);
}

/* One call on a helper of tid's own, taken and given back. */
static ssize_t call_once(pid_t tid, struct helper_call *a)
{
	struct ns_helper *h = ns_helper_get(tid);
	ssize_t r;

	if (!h)
		return -EPERM;
	r = call_retrying(&h, tid, a);
	ns_helper_put(h);
	return r;
}

int ns_helper_stat(pid_t tid, const char *path, int flags, struct stat *st)
{
	struct helper_call a = { .op = OP_STAT, .path = path, .flags = flags, .in = (char *)st,
				 .size = sizeof(*st), .fd = -1 };
	ssize_t r = call_once(tid, &a);

	return r < 0 ? (int)r : r == (ssize_t)sizeof(*st) ? 0 : -EIO;
}

ssize_t ns_helper_readlink(pid_t tid, const char *path, char *buf, size_t size)
{
	struct helper_call a = { .op = OP_READLINK, .path = path, .in = buf, .size = size,
				 .fd = -1 };

	return call_once(tid, &a);
}

int ns_helper_access(pid_t tid, const char *path, int mode, int flags)
{
	struct helper_call a = { .op = OP_ACCESS, .path = path, .flags = flags, .off = mode,
				 .fd = -1 };

	return (int)call_once(tid, &a);
}

int ns_helper_open_dir(pid_t tid, const char *path)
{
	struct helper_call a = { .op = OP_OPEN_DIR, .path = path,
				 .flags = O_RDONLY | O_DIRECTORY, .fd = -1 };
	ssize_t r = call_once(tid, &a);

	if (r == 0 && a.fd < 0)
		return -EIO;
	return r < 0 ? (int)r : a.fd;
}
