/* The source: an existing procfs (-o source=), or an instance procfast makes
 * with the kernel's mount API, detached from every mount table, when the
 * mount asks for another pid namespace or for procfs's own options. The
 * kernel then applies hidepid=, gid= and subset= itself, with the caller's
 * credentials that every worker thread takes, and names processes as that
 * namespace does.
 */
#include "fs/source.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/magic.h>
#include <linux/nsfs.h>

#include "fs/cleanup.h"

int source_is_private(const struct source_spec *s)
{
	return s->pidns || s->hidepid || s->subset || s->gid;
}

static int fail(const char *what, const char *detail)
{
	fprintf(stderr, "procfast: %s: %s\n", what, detail);
	return -1;
}

/* The source must be a procfs: anything else would be mirrored as if it were. */
static int open_path(const char *path)
{
	struct statfs sf;
	__do_close int fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return fail(path, strerror(errno));
	if (fstatfs(fd, &sf) || sf.f_type != PROC_SUPER_MAGIC) {
		fprintf(stderr, "procfast: source %s is not a procfs\n", path);
		return -1;
	}
	return move_fd(&fd);
}

static int set_option(int fs, const char *key, const char *value)
{
	return value ? fsconfig(fs, FSCONFIG_SET_STRING, key, value, 0) : 0;
}

/* A new procfs of the calling process's pid namespace; -errno on failure. */
static int make_instance(const struct source_spec *s)
{
	__do_close int fs = fsopen("proc", FSOPEN_CLOEXEC);
	int mnt;

	if (fs < 0)
		return -errno;
	if (set_option(fs, "hidepid", s->hidepid) || set_option(fs, "subset", s->subset) ||
	    set_option(fs, "gid", s->gid) || fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0))
		return -errno;
	mnt = fsmount(fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC);
	return mnt < 0 ? -errno : mnt;
}

static int send_fd(int sock, int fd, int err)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
	struct iovec iov = { .iov_base = &err, .iov_len = sizeof(err) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (fd >= 0) {
		msg.msg_control = cbuf;
		msg.msg_controllen = sizeof(cbuf);
		struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	return sendmsg(sock, &msg, 0) < 0 ? -1 : 0;
}

static int recv_fd(int sock)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	int err = -EIO, fd = -1;
	struct iovec iov = { .iov_base = &err, .iov_len = sizeof(err) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			      .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *c;

	if (recvmsg(sock, &msg, MSG_CMSG_CLOEXEC) <= 0)
		return -EIO;
	c = CMSG_FIRSTHDR(&msg);
	if (c && c->cmsg_type == SCM_RIGHTS)
		memcpy(&fd, CMSG_DATA(c), sizeof(int));
	return fd >= 0 ? fd : err;
}

/* procfs takes its pid namespace from the process that creates it, and
 * setns() moves only one's future children: a grandchild, born in the
 * namespace, makes the instance and hands it back. */
static void instance_in_namespace(int nsfd, int sock, const struct source_spec *s)
{
	pid_t child;
	int status = 0;

	if (setns(nsfd, CLONE_NEWPID)) {
		send_fd(sock, -1, -errno);
		_exit(1);
	}
	child = fork();
	if (child == 0) {
		int fd = make_instance(s);

		send_fd(sock, fd, fd < 0 ? fd : 0);
		_exit(0);
	}
	if (child < 0) /* ENOMEM: the namespace's init has exited */
		send_fd(sock, -1, errno == ENOMEM ? -ESRCH : -errno);
	else
		waitpid(child, &status, 0);
	_exit(0);
}

static int instance_of_namespace(int nsfd, const struct source_spec *s)
{
	int sv[2], fd;
	pid_t child;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv))
		return -errno;
	child = fork();
	if (child == 0) {
		close(sv[0]);
		instance_in_namespace(nsfd, sv[1], s);
	}
	close(sv[1]);
	fd = child < 0 ? -errno : recv_fd(sv[0]);
	close(sv[0]);
	if (child > 0)
		waitpid(child, NULL, 0);
	return fd;
}

static int open_pidns(const char *path)
{
	__do_close int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return fail(path, strerror(errno));
	if (ioctl(fd, NS_GET_NSTYPE) != CLONE_NEWPID) {
		fprintf(stderr, "procfast: pidns=%s: not a pid namespace file\n", path);
		return -1;
	}
	return move_fd(&fd);
}

static int open_private(const struct source_spec *s, int *nsfd)
{
	int fd;

	if (s->pidns && (*nsfd = open_pidns(s->pidns)) < 0)
		return -1;
	fd = *nsfd >= 0 ? instance_of_namespace(*nsfd, s) : make_instance(s);
	if (fd == -ESRCH)
		return fail(s->pidns, "the pid namespace has no init process any more");
	if (fd < 0)
		return fail("cannot make a procfs instance", strerror(-fd));
	return fd;
}

int source_open(const struct source_spec *s, int *nsfd)
{
	*nsfd = -1;
	if (s->path && source_is_private(s)) {
		fprintf(stderr, "procfast: source= cannot be combined with pidns=, hidepid=, subset= or gid=\n");
		return -1;
	}
	return source_is_private(s) ? open_private(s, nsfd) : open_path(s->path ? s->path : "/proc");
}
