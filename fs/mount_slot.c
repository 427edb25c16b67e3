#include "fs/mount_slot.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fs/cleanup.h"
#include "fs/log.h"
#include "fs/supervisor.h"

struct mount_slot *mount_slot_from_join(struct join_request *r)
{
	struct mount_slot *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->join = *r;
	s->fd = r->fuse_fd;
	s->ready_rd = -1;
	memset(r, 0, sizeof(*r));
	r->conn = r->fuse_fd = r->nsfd = -1;
	return s;
}

void mount_slot_free(struct mount_slot *s, int err)
{
	if (!s)
		return;
	control_answer(s->join.conn, err);
	s->join.conn = -1;
	if (s->ready_rd >= 0)
		close(s->ready_rd);
	join_request_free(&s->join);
	free(s);
}

int self_exe(char *buf, size_t len)
{
	ssize_t n = readlink("/proc/self/exe", buf, len - 1);
	char *deleted;

	if (n <= 0)
		return -errno;
	buf[n] = '\0';
	/* Replaced by a package upgrade: the new file is at the old path. */
	if ((deleted = strstr(buf, " (deleted)")) && !deleted[10])
		*deleted = '\0';
	return 0;
}

/* In the child: fd stays open across execve, named in the environment. */
static int pass_fd(const char *name, int fd)
{
	char v[16];

	snprintf(v, sizeof(v), "%d", fd);
	return fcntl(fd, F_SETFD, 0) || setenv(name, v, 1) ? -1 : 0;
}

static void exec_server(struct mount_slot *s, int ready_wr, const sigset_t *old)
{
	char exe[PATH_MAX];

	sigprocmask(SIG_SETMASK, old, NULL);
	if (self_exe(exe, sizeof(exe)) || pass_fd(RESUME_ENV, s->fd) ||
	    (s->join.nsfd >= 0 && pass_fd(PIDNS_FD_ENV, s->join.nsfd)) ||
	    (ready_wr >= 0 && pass_fd(READY_FD_ENV, ready_wr)) ||
	    setenv(SERVE_ENV, s->ready ? "resumed" : "first", 1) ||
	    (log_uses_syslog() && setenv(LOG_ENV, "syslog", 1)))
		_exit(127);
	execv(exe, s->join.argv);
	log_err("cannot execute %s: %s", exe, strerror(errno));
	_exit(127);
}

pid_t mount_slot_exec_server(struct mount_slot *s, const sigset_t *old)
{
	int ready[2] = { -1, -1 };
	pid_t pid;

	/* Only a first server tells when it is set up: after that, the
	 * connection is. */
	if (!s->ready && s->ready_rd < 0 && pipe2(ready, O_CLOEXEC))
		return -1;
	pid = fork();
	if (pid == 0)
		exec_server(s, ready[1], old);
	if (ready[1] >= 0)
		close(ready[1]);
	if (pid < 0) {
		if (ready[0] >= 0)
			close(ready[0]);
		return -1;
	}
	if (ready[0] >= 0)
		s->ready_rd = ready[0];
	return pid;
}

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

/* fd, nsfd, ready, mount point, argc, args: each NUL-terminated. */
static int save_one(int mfd, const struct mount_slot *s)
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
	if (fcntl(s->fd, F_SETFD, 0) || (s->join.nsfd >= 0 && fcntl(s->join.nsfd, F_SETFD, 0)))
		return -errno;
	return 0;
}

int mount_slots_save(struct mount_slot **slots, size_t n)
{
	__do_close int mfd = memfd_create("procfast-slots", 0);
	int r;

	if (mfd < 0)
		return -errno;
	for (size_t i = 0; i < n; i++)
		if ((r = save_one(mfd, slots[i])))
			return r;
	if (lseek(mfd, 0, SEEK_SET))
		return -errno;
	return move_fd(&mfd);
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
	s->ready_rd = -1;
	s->join.conn = -1;
	if (number(p, end, &s->fd) || number(p, end, &s->join.nsfd) || number(p, end, &s->ready))
		goto fail;
	s->join.fuse_fd = s->fd;
	start = *p;
	if (!field(p, end) || number(p, end, &argc) || argc <= 0 || argc > 256)
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
	fcntl(s->fd, F_SETFD, FD_CLOEXEC);
	if (s->join.nsfd >= 0)
		fcntl(s->join.nsfd, F_SETFD, FD_CLOEXEC);
	return s;
fail:
	free(s->join.argv);
	free(s);
	return NULL;
}

static char *read_whole(int fd, size_t *len)
{
	off_t size = lseek(fd, 0, SEEK_END);
	char *buf;

	if (size <= 0 || lseek(fd, 0, SEEK_SET))
		return NULL;
	buf = malloc((size_t)size);
	if (buf && pread(fd, buf, (size_t)size, 0) != size) {
		free(buf);
		return NULL;
	}
	*len = (size_t)size;
	return buf;
}

int mount_slots_restore(struct mount_slot ***slots, size_t *n)
{
	const char *v = getenv(JOINED_FD_ENV);
	__do_close int mfd = v ? atoi(v) : -1;
	__do_free char *buf = NULL;
	char *p, *end;
	size_t len = 0;

	unsetenv(JOINED_FD_ENV);
	if (mfd < 0)
		return 0;
	if (!(buf = read_whole(mfd, &len)))
		return len ? -EINVAL : 0;
	for (p = buf, end = buf + len; p < end;) {
		struct mount_slot *s = restore_one(&p, end), **more;

		if (!s)
			return -EINVAL;
		more = realloc(*slots, (*n + 1) * sizeof(*more));
		if (!more) {
			mount_slot_free(s, 0);
			return -ENOMEM;
		}
		*slots = more;
		(*slots)[(*n)++] = s;
	}
	return 0;
}
