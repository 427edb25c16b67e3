/* Handing a mount over to a running daemon (-o daemon= on the mounting side,
 * -o control= on the daemon's).
 *
 * The process that mounted sends one SOCK_SEQPACKET message: as SCM_RIGHTS
 * the session fd and, for pidns=, the namespace file it opened (it may see a
 * file the daemon cannot, a bind in its own mount namespace); as payload the
 * absolute mount point and its own command line, each NUL-terminated. The
 * daemon answers with one int: 0 once a server answered the kernel's INIT, so
 * the mount works when the sender exits, or an errno. Only a peer with the
 * daemon's own uid is heard: whoever is heard has a server started with the
 * options it chose.
 */
#include "fs/supervisor/control.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "fs/lib/cleanup.h"
#include "fs/lib/log.h"
#include "fs/supervisor/takeover.h"

#define MAX_MSG 16384
#define MAX_ARGS 256
#define ANSWER_WAIT_MS 30000

static int socket_address(const char *path, struct sockaddr_un *sa)
{
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sa->sun_path))
		return -ENAMETOOLONG;
	strcpy(sa->sun_path, path);
	return 0;
}

/* A socket file left by a daemon that is gone is taken over; one that a
 * daemon answers on is not. */
static int claim_path(const struct sockaddr_un *sa)
{
	__do_close int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	struct stat st;

	if (lstat(sa->sun_path, &st))
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISSOCK(st.st_mode))
		return -EEXIST;
	if (fd >= 0 && connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) == 0)
		return -EADDRINUSE;
	return unlink(sa->sun_path) ? -errno : 0;
}

int control_listen(const char *path)
{
	struct sockaddr_un sa;
	__do_close int fd = -1;
	mode_t mask;
	int r;

	if ((r = socket_address(path, &sa)) || (r = claim_path(&sa)))
		return r;
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	mask = umask(0077); /* the owner only, from the start */
	r = bind(fd, (struct sockaddr *)&sa, sizeof(sa)) ? -errno : 0;
	umask(mask);
	if (r)
		return r;
	if (listen(fd, 16)) {
		r = -errno;
		unlink(path);
		return r;
	}
	return move_fd(&fd);
}

/* Whether the sender runs as we do; *pid is its pid (0 where our pid
 * namespace does not see it). */
static int peer_is_us(int conn, pid_t *pid)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);

	if (getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &cred, &len))
		return 0;
	*pid = cred.pid;
	return cred.uid == geteuid();
}

int control_parse_payload(char *buf, size_t len, struct join_request *r)
{
	size_t n = 0;

	if (!len || buf[len - 1])
		return -EINVAL;
	r->argv = calloc(MAX_ARGS + 1, sizeof(char *));
	if (!r->argv)
		return -ENOMEM;
	r->mountpoint = buf;
	for (char *p = buf + strlen(buf) + 1; p < buf + len; p += strlen(p) + 1) {
		if (n == MAX_ARGS)
			return -E2BIG;
		r->argv[n++] = p;
	}
	return r->mountpoint[0] == '/' && n ? 0 : -EINVAL;
}

static void take_fds(struct msghdr *mh, struct join_request *r)
{
	for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
		size_t n;
		int *fds = (int *)CMSG_DATA(c);

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < n; i++) {
			if (i == 0 && r->fuse_fd < 0)
				r->fuse_fd = fds[i];
			else if (i == 1 && r->nsfd < 0)
				r->nsfd = fds[i];
			else
				close(fds[i]);
		}
	}
}

static int receive(int conn, struct join_request *r)
{
	char *buf = malloc(MAX_MSG);
	union {
		char space[CMSG_SPACE(2 * sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { .iov_base = buf, .iov_len = MAX_MSG };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.space,
			     .msg_controllen = sizeof(ctl.space) };
	struct pollfd p = { .fd = conn, .events = POLLIN };
	ssize_t n;

	if (!buf)
		return -ENOMEM;
	r->buf = buf;
	if (poll(&p, 1, 1000) != 1)
		return -ETIMEDOUT; /* a connection that says nothing holds up no one */
	n = recvmsg(conn, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	if (n < 0)
		return -errno;
	take_fds(&mh, r);
	if (r->fuse_fd < 0 && n == sizeof(TAKEOVER_HELLO) && !memcmp(buf, TAKEOVER_HELLO, (size_t)n)) {
		r->successor = 1;
		return 0;
	}
	if (r->fuse_fd < 0 || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)))
		return -EINVAL;
	return control_parse_payload(buf, (size_t)n, r);
}

int control_accept(int lfd, struct join_request *r)
{
	int err;

	memset(r, 0, sizeof(*r));
	r->fuse_fd = r->nsfd = -1;
	r->conn = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (r->conn < 0)
		return -errno;
	err = peer_is_us(r->conn, &r->sender) ? receive(r->conn, r) : -EPERM;
	if (err) {
		log_err("refused a mount handed over: %s", strerror(-err));
		join_request_answer(r->conn, err);
		r->conn = -1;
		join_request_free(r);
	}
	return err;
}

static size_t payload(char *buf, const char *mountpoint, int argc, char **argv)
{
	size_t len = 0;

	for (int i = -1; i < argc; i++) {
		const char *s = i < 0 ? mountpoint : argv[i];
		size_t n = strlen(s) + 1;

		if (len + n > MAX_MSG)
			return 0;
		memcpy(buf + len, s, n);
		len += n;
	}
	return len;
}

int control_hand_over(const char *path, int fuse_fd, int nsfd, const char *mountpoint,
		      int argc, char **argv)
{
	__do_free char *buf = malloc(MAX_MSG);
	__do_close int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	int fds[2] = { fuse_fd, nsfd }, answer;
	union {
		char space[CMSG_SPACE(sizeof(fds))];
		struct cmsghdr align;
	} ctl;
	struct sockaddr_un sa;
	struct iovec iov = { .iov_base = buf };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.space };
	struct pollfd p = { .fd = fd, .events = POLLIN };
	struct cmsghdr *c;
	int r;

	if (!buf || fd < 0)
		return -ENOMEM;
	if ((r = socket_address(path, &sa)))
		return r;
	if (!(iov.iov_len = payload(buf, mountpoint, argc, argv)))
		return -E2BIG;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
		return -errno;
	mh.msg_controllen = CMSG_SPACE(sizeof(int) * (nsfd >= 0 ? 2 : 1));
	c = CMSG_FIRSTHDR(&mh);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int) * (nsfd >= 0 ? 2 : 1));
	memcpy(CMSG_DATA(c), fds, sizeof(int) * (nsfd >= 0 ? 2 : 1));
	if (sendmsg(fd, &mh, MSG_NOSIGNAL) < 0)
		return -errno;
	if ((r = poll(&p, 1, ANSWER_WAIT_MS)) <= 0)
		return r ? -errno : -ETIMEDOUT;
	if (recv(fd, &answer, sizeof(answer), 0) != sizeof(answer))
		return -ECONNRESET; /* the daemon went away meanwhile */
	return answer;
}
