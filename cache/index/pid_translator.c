#include "cache/index/pid_translator.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/capability.h>

#include "fs/lib/log.h"

/* --- messages ------------------------------------------------------------- */

enum ctl_op { OP_SPAWN, OP_RELAY, OP_KILL };

struct ctl_msg {       /* a server (or the start) to the spawner */
	int op;
	pid_t pid;     /* OP_RELAY: the daemon's pid to translate */
	uint64_t id;   /* OP_RELAY, OP_KILL: which translator */
};

enum answer_kind { ANS_READY, ANS_CRED, ANS_VALUE, ANS_NONE };

struct answer {        /* a translator (or the spawner) to its server */
	int kind;
	pid_t value;   /* ANS_READY: 0 or -errno; ANS_VALUE: the view's pid */
	pid_t self;    /* ANS_READY: the translator's own pid, as the view names it */
	uint64_t id;   /* ANS_READY */
};

struct relay_msg {     /* the spawner to a translator, with the credential */
	pid_t pid;
	int has_cred;
};

/* A translator that does not answer within this is stopped (a container's
 * root may have sent it SIGSTOP) and made again. */
#define ANSWER_TIMEOUT_S 5
#define MAX_TRANSLATORS 8

static int send_cred(int sock, const void *data, size_t len, pid_t pid)
{
	char cbuf[CMSG_SPACE(sizeof(struct ucred))] = { 0 };
	struct ucred uc = { .pid = pid, .uid = getuid(), .gid = getgid() };
	struct iovec iov = { .iov_base = (void *)data, .iov_len = len };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			    .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);

	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_CREDENTIALS;
	c->cmsg_len = CMSG_LEN(sizeof(uc));
	memcpy(CMSG_DATA(c), &uc, sizeof(uc));
	return sendmsg(sock, &m, MSG_NOSIGNAL) == (ssize_t)len ? 0 : -errno;
}

/* One message of exactly len bytes; *cred_pid the credential's pid as this
 * process's namespace names it (0: none there), when cred_pid is given.
 * 0, or -errno (-EPIPE at the other side's end). */
static int recv_msg(int sock, void *data, size_t len, pid_t *cred_pid, int *fd)
{
	union {
		char buf[CMSG_SPACE(sizeof(struct ucred)) + CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} cbuf;
	struct iovec iov = { .iov_base = data, .iov_len = len };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf.buf,
			    .msg_controllen = sizeof(cbuf.buf) };
	ssize_t n = recvmsg(sock, &m, MSG_CMSG_CLOEXEC);

	if (fd)
		*fd = -1;
	if (cred_pid)
		*cred_pid = 0;
	if (n < 0)
		return -errno;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
		if (c->cmsg_level != SOL_SOCKET)
			continue;
		if (c->cmsg_type == SCM_CREDENTIALS && cred_pid) {
			struct ucred uc;

			memcpy(&uc, CMSG_DATA(c), sizeof(uc));
			*cred_pid = uc.pid;
		} else if (c->cmsg_type == SCM_RIGHTS) {
			int got;

			memcpy(&got, CMSG_DATA(c), sizeof(got));
			if (fd && *fd < 0)
				*fd = got;
			else
				close(got);
		}
	}
	if (n == 0)
		return -EPIPE;
	return (size_t)n == len ? 0 : -EBADMSG;
}

static int send_fd(int sock, const void *data, size_t len, int fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
	struct iovec iov = { .iov_base = (void *)data, .iov_len = len };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			    .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);

	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	return sendmsg(sock, &m, MSG_NOSIGNAL) == (ssize_t)len ? 0 : -errno;
}

static int passcred(int sock)
{
	int on = 1;

	return setsockopt(sock, SOL_SOCKET, SO_PASSCRED, &on, sizeof(on)) ? -errno : 0;
}

/* --- the translator: in the view's namespace ------------------------------ */

/* A view's pid from the server: answered by a credential naming it. */
static void answer_to_daemon(int to_server)
{
	struct answer a = { .kind = ANS_CRED };
	pid_t v;

	if (recv_msg(to_server, &v, sizeof(v), NULL, NULL))
		_exit(0);
	/* ESRCH: no such task in the view */
	if (v <= 0 || send_cred(to_server, &a, sizeof(a), v)) {
		a.kind = ANS_NONE;
		if (send(to_server, &a, sizeof(a), MSG_NOSIGNAL) != sizeof(a))
			_exit(0);
	}
}

/* A daemon's pid from the spawner, named by its credential: the number as
 * this namespace reads it goes to the server. */
static void answer_from_daemon(int to_spawner, int to_server)
{
	struct relay_msg r;
	struct answer a = { .kind = ANS_NONE };
	pid_t v;

	if (recv_msg(to_spawner, &r, sizeof(r), &v, NULL))
		_exit(0);
	if (r.has_cred) {
		a.kind = ANS_VALUE;
		a.value = v;
	}
	if (send(to_server, &a, sizeof(a), MSG_NOSIGNAL) != sizeof(a))
		_exit(0);
}

/* Keeps the two sockets alone, as fds 3 (the server's) and 4 (the
 * spawner's): it is a process of the container, which sees its fds. */
static void translator_main(int to_server, int to_spawner, pid_t spawner, uint64_t id)
{
	struct answer ready = { .kind = ANS_READY, .id = id };
	pid_t parent;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	/* the spawner is outside the view (0), or the view is its namespace */
	parent = getppid();
	if (parent != 0 && parent != spawner)
		_exit(1);
	if (dup2(to_server, 3) < 0 || dup2(to_spawner, 4) < 0 ||
	    syscall(SYS_close_range, 5, ~0U, 0) || passcred(4))
		_exit(1);
	ready.self = getpid();
	if (send(3, &ready, sizeof(ready), MSG_NOSIGNAL) != sizeof(ready))
		_exit(1);
	for (;;) {
		struct pollfd p[2] = { { .fd = 3, .events = POLLIN }, { .fd = 4, .events = POLLIN } };

		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			_exit(1);
		}
		if (p[0].revents)
			answer_to_daemon(3);
		if (p[1].revents)
			answer_from_daemon(4, 3);
	}
}

/* --- the spawner: in the daemon's namespace, its children in the view's --- */

struct kid {
	int sock; /* to the translator: credentials, and its end seen */
	pid_t pid;
	uint64_t id;
};

static struct kid kids[MAX_TRANSLATORS];
static uint64_t last_id;

static void spawn_kid(int to_server)
{
	struct answer a = { .kind = ANS_READY, .value = -EAGAIN };
	int sv[2], slot = -1;
	pid_t pid, self = getpid();

	for (int i = 0; i < MAX_TRANSLATORS && slot < 0; i++)
		if (kids[i].pid == 0)
			slot = i;
	if (slot < 0 || socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv))
		goto fail;
	pid = fork();
	if (pid == 0)
		translator_main(to_server, sv[1], self, last_id + 1);
	close(sv[1]);
	if (pid < 0) {
		a.value = errno == ENOMEM ? -ESRCH : -errno; /* ENOMEM: the view's init is gone */
		close(sv[0]);
		goto fail;
	}
	kids[slot] = (struct kid){ .sock = sv[0], .pid = pid, .id = ++last_id };
	close(to_server); /* the translator says it is ready */
	return;
fail:
	send(to_server, &a, sizeof(a), MSG_NOSIGNAL);
	close(to_server);
}

static struct kid *kid_of(uint64_t id)
{
	for (int i = 0; i < MAX_TRANSLATORS; i++)
		if (kids[i].pid && kids[i].id == id)
			return &kids[i];
	return NULL;
}

/* Not found (ESRCH): the task is gone; the translator answers 0. */
static void relay(struct kid *k, pid_t pid)
{
	struct relay_msg r = { .pid = pid, .has_cred = 1 };

	if (pid > 0 && !send_cred(k->sock, &r, sizeof(r), pid))
		return;
	r.has_cred = 0;
	send(k->sock, &r, sizeof(r), MSG_NOSIGNAL);
}

static void reap(struct kid *k)
{
	close(k->sock);
	waitpid(k->pid, NULL, 0);
	*k = (struct kid){ 0 };
}

static void handle_ctl(int ctl)
{
	struct ctl_msg m;
	struct kid *k;
	int fd, r = recv_msg(ctl, &m, sizeof(m), NULL, &fd);

	if (r == -EPIPE)
		_exit(0); /* every process of the daemon has gone */
	if (r == 0 && m.op == OP_SPAWN && fd >= 0) {
		spawn_kid(fd);
		return;
	}
	if (fd >= 0)
		close(fd);
	if (r || !(k = kid_of(m.id)))
		return; /* gone: its server reads its end */
	if (m.op == OP_RELAY)
		relay(k, m.pid);
	else if (m.op == OP_KILL)
		kill(k->pid, SIGKILL); /* reaped as its socket ends */
}

static void spawner_loop(int ctl)
{
	for (;;) {
		struct pollfd p[1 + MAX_TRANSLATORS];

		p[0] = (struct pollfd){ .fd = ctl, .events = POLLIN };
		for (int i = 0; i < MAX_TRANSLATORS; i++)
			p[1 + i] = (struct pollfd){ .fd = kids[i].pid ? kids[i].sock : -1,
						    .events = POLLIN };
		if (poll(p, 1 + MAX_TRANSLATORS, -1) < 0)
			continue;
		/* a translator never writes to the spawner: anything is its end */
		for (int i = 0; i < MAX_TRANSLATORS; i++)
			if (kids[i].pid && p[1 + i].revents)
				reap(&kids[i]);
		if (p[0].revents)
			handle_ctl(ctl);
	}
}

/* CAP_SYS_ADMIN alone, over its own pid namespace (to name any of its
 * tasks in a credential) and the view's (the translators, inheriting it):
 * the bounding set first, while CAP_SETPCAP is still held. */
static int keep_sys_admin(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2] = { { 0 } };

	for (int c = 0; c <= CAP_LAST_CAP; c++)
		if (c != CAP_SYS_ADMIN && prctl(PR_CAPBSET_DROP, c, 0, 0, 0) && errno != EINVAL)
			return -errno;
	prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	d[CAP_TO_INDEX(CAP_SYS_ADMIN)].effective = CAP_TO_MASK(CAP_SYS_ADMIN);
	d[CAP_TO_INDEX(CAP_SYS_ADMIN)].permitted = CAP_TO_MASK(CAP_SYS_ADMIN);
	if (syscall(SYS_capset, &h, d))
		return -errno;
	return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ? -errno : 0;
}

/* Forked from the starting daemon, which may hold a terminal or a pipe on
 * its standard streams: they are let go, so that nobody waits on them. */
static int detach(int ctl, int nsfd)
{
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);

	if (null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(null, 2) < 0)
		return -EIO;
	/* above every fd first: either may be 3 or 4 */
	ctl = fcntl(ctl, F_DUPFD_CLOEXEC, 100);
	nsfd = fcntl(nsfd, F_DUPFD_CLOEXEC, 100);
	if (ctl < 0 || nsfd < 0 || dup2(ctl, 3) < 0 || dup2(nsfd, 4) < 0 ||
	    syscall(SYS_close_range, 5, ~0U, 0))
		return -EIO;
	if (setns(4, CLONE_NEWPID))
		return -errno;
	close(4);
	return keep_sys_admin();
}

static void spawner_main(int ctl, int nsfd)
{
	int err;

	prctl(PR_SET_NAME, NS_TRANSLATOR_COMM);
	prctl(PR_SET_DUMPABLE, 0);
	signal(SIGINT, SIG_IGN); /* a terminal's: the daemon decides */
	signal(SIGHUP, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	signal(SIGTERM, SIG_DFL);
	err = detach(ctl, nsfd);
	/* one word: whether it got in */
	if (send(3, &err, sizeof(err), MSG_NOSIGNAL) != sizeof(err) || err)
		_exit(1);
	spawner_loop(3);
}

/* --- the daemon's side ---------------------------------------------------- */

static int ctl = -1;                /* to the spawner, shared by the daemon's processes */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int sock = -1;               /* to this process's translator */
static uint64_t sock_id;
static pid_t sock_owner;            /* a copy inherited by a fork is not ours */
static int gone;                    /* the namespace has no init: for good */
static int spawner_lost;

static void drop(void)
{
	struct ctl_msg m = { .op = OP_KILL, .id = sock_id };

	if (sock < 0)
		return;
	if (sock_owner == getpid()) {
		send(ctl, &m, sizeof(m), MSG_NOSIGNAL);
	}
	close(sock);
	sock = -1;
}

static void set_timeout(int fd)
{
	struct timeval tv = { .tv_sec = ANSWER_TIMEOUT_S };

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
}

/* A translator for this process; *self its own pid in the view. 0 or -errno. */
static int spawn(pid_t *self)
{
	struct ctl_msg m = { .op = OP_SPAWN };
	struct answer a = { 0 };
	int sv[2], r;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv))
		return -errno;
	set_timeout(sv[0]);
	r = passcred(sv[0]);
	if (!r && (r = send_fd(ctl, &m, sizeof(m), sv[1])) && !spawner_lost) {
		spawner_lost = 1;
		log_err("pidns view: the pid translators' spawner is gone (%s): pids of the view read as 0",
			strerror(-r));
	}
	close(sv[1]);
	if (!r)
		r = recv_msg(sv[0], &a, sizeof(a), NULL, NULL);
	if (!r && (a.kind != ANS_READY || a.value))
		r = a.kind == ANS_READY && a.value ? a.value : -EBADMSG;
	if (r) {
		close(sv[0]);
		if (r == -ESRCH && !gone) {
			gone = 1;
			log_info("pidns view: the namespace has no init any more: its pids read as 0");
		}
		return r;
	}
	sock = sv[0];
	sock_id = a.id;
	sock_owner = getpid();
	if (self)
		*self = a.self;
	return 0;
}

static int ready(void)
{
	if (sock >= 0 && sock_owner != getpid()) {
		close(sock); /* the parent's, copied by fork */
		sock = -1;
	}
	if (sock >= 0)
		return 1;
	return !gone && !spawner_lost && spawn(NULL) == 0;
}

static int ask_to_daemon(pid_t v, pid_t *out)
{
	struct answer a;
	int r;

	if (send(sock, &v, sizeof(v), MSG_NOSIGNAL) != sizeof(v))
		return -errno;
	if ((r = recv_msg(sock, &a, sizeof(a), out, NULL)))
		return r;
	if (a.kind == ANS_NONE)
		*out = 0;
	return a.kind == ANS_CRED || a.kind == ANS_NONE ? 0 : -EBADMSG;
}

static int ask_from_daemon(pid_t d, pid_t *out)
{
	struct ctl_msg m = { .op = OP_RELAY, .pid = d, .id = sock_id };
	struct answer a;
	int r;

	if (send(ctl, &m, sizeof(m), MSG_NOSIGNAL) != sizeof(m))
		return -errno;
	if ((r = recv_msg(sock, &a, sizeof(a), NULL, NULL)))
		return r;
	*out = a.kind == ANS_VALUE ? a.value : 0;
	return a.kind == ANS_VALUE || a.kind == ANS_NONE ? 0 : -EBADMSG;
}

/* A translator that died or hangs is replaced once per question. */
static pid_t translate(int (*ask)(pid_t, pid_t *), pid_t pid)
{
	pid_t out = 0;

	if (pid <= 0)
		return 0;
	pthread_mutex_lock(&lock);
	for (int attempt = 0; attempt < 2; attempt++) {
		int r;

		if (!ready())
			break;
		if (!(r = ask(pid, &out)))
			break;
		log_debug("pidns view: translator lost (%s): making another", strerror(-r));
		out = 0;
		drop();
	}
	pthread_mutex_unlock(&lock);
	return out > 0 ? out : 0;
}

pid_t pid_translator_to_daemon(pid_t view_pid)
{
	return translate(ask_to_daemon, view_pid);
}

pid_t pid_translator_from_daemon(pid_t daemon_pid)
{
	return translate(ask_from_daemon, daemon_pid);
}

/* The translator's own pid both ways: both directions proven. The start's
 * translator is let go after: each server makes its own. */
static int prove(void)
{
	pid_t self = 0, d;
	int r = spawn(&self);

	if (r)
		return r;
	d = pid_translator_to_daemon(self);
	r = d > 0 && pid_translator_from_daemon(d) == self ? 0 : -EPROTO;
	pthread_mutex_lock(&lock);
	drop();
	pthread_mutex_unlock(&lock);
	return r;
}

int pid_translator_start(int nsfd)
{
	int sv[2], err = -EIO;
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv))
		return -errno;
	/* Forked twice: no child of the daemon's to reap or to mistake for a
	 * server; it ends when every process of the daemon closed ctl. */
	pid = fork();
	if (pid == 0) {
		if (fork() == 0)
			spawner_main(sv[1], nsfd);
		_exit(0);
	}
	close(sv[1]);
	if (pid > 0)
		waitpid(pid, NULL, 0);
	if (pid < 0 || recv(sv[0], &err, sizeof(err), 0) != sizeof(err) || err) {
		err = pid < 0 ? -errno : err ? err : -EIO;
		close(sv[0]);
		return err;
	}
	ctl = sv[0];
	if ((err = prove())) {
		close(ctl); /* the spawner reads its end */
		ctl = -1;
	}
	return err;
}
