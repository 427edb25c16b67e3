/* The source: an existing procfs (-o source=), or an instance procfast makes
 * with the kernel's mount API, detached from every mount table, when the
 * mount asks for another pid namespace or for procfs's own options. The
 * kernel then applies hidepid=, gid= and subset= itself, with the caller's
 * credentials that every worker thread takes, and names processes as that
 * namespace does.
 */
#include "fs/daemon/source.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/magic.h>
#include <linux/nsfs.h>

#include "fs/lib/cleanup.h"

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
	static const struct source_spec plain;

	if (!s)
		s = &plain;
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

/* Both instances, or an error, in one message. */
static int send_fds(int sock, const int fds[2], int err)
{
	char cbuf[CMSG_SPACE(2 * sizeof(int))] = { 0 };
	struct iovec iov = { .iov_base = &err, .iov_len = sizeof(err) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (!err && fds) {
		msg.msg_control = cbuf;
		msg.msg_controllen = sizeof(cbuf);
		struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(2 * sizeof(int));
		memcpy(CMSG_DATA(c), fds, 2 * sizeof(int));
	}
	return sendmsg(sock, &msg, 0) < 0 ? -1 : 0;
}

static int recv_fds(int sock, int fds[2])
{
	char cbuf[CMSG_SPACE(2 * sizeof(int))];
	int err = -EIO;
	struct iovec iov = { .iov_base = &err, .iov_len = sizeof(err) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			      .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *c;

	if (recvmsg(sock, &msg, MSG_CMSG_CLOEXEC) <= 0)
		return -EIO;
	c = CMSG_FIRSTHDR(&msg);
	if (err || !c || c->cmsg_type != SCM_RIGHTS || c->cmsg_len != CMSG_LEN(2 * sizeof(int)))
		return err ? err : -EIO;
	memcpy(fds, CMSG_DATA(c), 2 * sizeof(int));
	return 0;
}

/* The mirror's instance, and a plain one for the process index: hidepid=
 * would hide processes from the daemon's own scans too. */
static int make_instances(const struct source_spec *s, int fds[2])
{
	fds[0] = make_instance(s);
	if (fds[0] < 0)
		return fds[0];
	fds[1] = make_instance(NULL);
	if (fds[1] < 0) {
		close(fds[0]);
		return fds[1];
	}
	return 0;
}

/* procfs takes its pid namespace from the process that creates it, and
 * setns() moves only one's future children: a grandchild, born in the
 * namespace, makes the instance and hands it back. */
static void instance_in_namespace(int nsfd, int sock, const struct source_spec *s)
{
	pid_t child;
	int status = 0;

	if (setns(nsfd, CLONE_NEWPID)) {
		send_fds(sock, NULL, -errno);
		_exit(1);
	}
	child = fork();
	if (child == 0) {
		int fds[2] = { -1, -1 };

		send_fds(sock, fds, make_instances(s, fds));
		_exit(0);
	}
	if (child < 0) /* ENOMEM: the namespace's init has exited */
		send_fds(sock, NULL, errno == ENOMEM ? -ESRCH : -errno);
	else
		waitpid(child, &status, 0);
	_exit(0);
}

static int instances_of_namespace(int nsfd, const struct source_spec *s, int fds[2])
{
	int sv[2], r;
	pid_t child;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv))
		return -errno;
	child = fork();
	if (child == 0) {
		close(sv[0]);
		instance_in_namespace(nsfd, sv[1], s);
	}
	close(sv[1]);
	r = child < 0 ? -errno : recv_fds(sv[0], fds);
	close(sv[0]);
	if (child > 0)
		waitpid(child, NULL, 0);
	return r;
}

int source_names_us(int procfs)
{
	char buf[32];
	ssize_t n = readlinkat(procfs, "self", buf, sizeof(buf) - 1);

	if (n <= 0)
		return 0;
	buf[n] = '\0';
	return atoi(buf) == getpid();
}

int source_own_procfs(void)
{
	__do_close int fd = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);

	int own;

	if (fd >= 0 && source_names_us(fd))
		return move_fd(&fd);
	own = make_instance(NULL);
	/* without the right to make one, /proc as it is (the mount's callers
	 * are then told apart less well) */
	return own >= 0 || fd < 0 ? own : move_fd(&fd);
}

int source_open_pidns(const char *path)
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

static int open_private(const struct source_spec *s, struct source *src)
{
	int fds[2] = { -1, -1 }, r;

	if (s->pidns && (src->nsfd = source_open_pidns(s->pidns)) < 0)
		return -1;
	r = src->nsfd >= 0 ? instances_of_namespace(src->nsfd, s, fds) : make_instances(s, fds);
	if (r == -ESRCH)
		return fail(s->pidns, "the pid namespace has no init process any more");
	if (r < 0)
		return fail("cannot make a procfs instance", strerror(-r));
	src->root = fds[0];
	src->index = fds[1];
	return 0;
}

int source_open(const struct source_spec *s, struct source *src)
{
	src->root = src->index = src->nsfd = -1;
	if (s->path && source_is_private(s)) {
		fprintf(stderr, "procfast: source= cannot be combined with pidns=, hidepid=, subset= or gid=\n");
		return -1;
	}
	if (source_is_private(s))
		return open_private(s, src);
	src->root = src->index = open_path(s->path ? s->path : "/proc");
	return src->root < 0 ? -1 : 0;
}
