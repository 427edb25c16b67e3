/* Passing the hand-over record on across an execve, and taking it there:
 * the record in a memfd named by HANDOVER_ENV, the legacy variables beside
 * it for one release (handover_legacy.c), the fds left open. */
#include "fs/supervisor/handover.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fs/lib/cleanup.h"
#include "fs/lib/log.h"
#include "fs/supervisor/mount_slot.h"

static size_t add(int *fds, size_t n, size_t max, int fd)
{
	if (fd >= 0 && n < max)
		fds[n++] = fd;
	return n;
}

size_t handover_fds(const struct handover *h, int *fds, size_t max)
{
	const int top[] = { h->session_fd, h->pidns_fd, h->ready_fd, h->rings_fd,
			    h->nodes_fd, h->control_fd, h->successor_fd };
	size_t n = 0;

	for (size_t i = 0; i < sizeof(top) / sizeof(top[0]); i++)
		n = add(fds, n, max, top[i]);
	for (size_t i = 0; i < h->nmounts; i++) {
		const struct mount_slot *s = h->mounts[i];

		n = add(fds, n, max, s->fd);
		n = add(fds, n, max, s->join.nsfd);
		n = add(fds, n, max, s->rings_fd);
		n = add(fds, n, max, s->nodes_fd);
	}
	return n;
}

/* Every fd h names open across execve (inherit 1) or not (0). */
static int set_inherit(const struct handover *h, int inherit)
{
	int fds[1024];
	size_t n = handover_fds(h, fds, 1024);

	if (n == 1024)
		return -E2BIG;
	for (size_t i = 0; i < n; i++)
		if (fcntl(fds[i], F_SETFD, inherit ? 0 : FD_CLOEXEC) && inherit)
			return -errno;
	return 0;
}

static int write_record(const struct handover *h)
{
	__do_free char *buf = NULL;
	__do_close int mfd = memfd_create("procfast-handover", 0);
	size_t len;
	int r;

	if (mfd < 0)
		return -errno;
	if ((r = handover_encode(h, &buf, &len)))
		return r;
	if (pwrite(mfd, buf, len, 0) != (ssize_t)len)
		return -EIO;
	return move_fd(&mfd);
}

int handover_put_record(const char *buf, size_t len)
{
	__do_close int mfd = memfd_create("procfast-handover", 0);
	char v[16];

	if (mfd < 0)
		return -errno;
	if (pwrite(mfd, buf, len, 0) != (ssize_t)len)
		return -EIO;
	snprintf(v, sizeof(v), "%d", mfd);
	if (setenv(HANDOVER_ENV, v, 1))
		return -errno;
	move_fd(&mfd); /* left open across the execve to come */
	return 0;
}

int handover_pass_legacy(const struct handover *h, struct handover_pass *p)
{
	int r;

	p->record = p->table = -1;
	if ((r = set_inherit(h, 1)) || (r = handover_to_legacy(h, &p->table)))
		handover_unpass(h, p);
	return r;
}

int handover_pass_on(const struct handover *h, struct handover_pass *p)
{
	char v[16];
	int r;

	p->record = p->table = -1;
	if ((r = set_inherit(h, 1)) || (r = p->record = write_record(h)) < 0)
		goto undo;
	snprintf(v, sizeof(v), "%d", p->record);
	if (setenv(HANDOVER_ENV, v, 1)) {
		r = -errno;
		goto undo;
	}
	/* For one release, also what the binary before reads: a rollback. */
	if ((r = handover_to_legacy(h, &p->table)))
		goto undo;
	return 0;
undo:
	handover_unpass(h, p);
	return r;
}

void handover_unpass(const struct handover *h, struct handover_pass *p)
{
	handover_unset_env();
	set_inherit(h, 0);
	if (p->record >= 0)
		close(p->record);
	if (p->table >= 0)
		close(p->table);
	p->record = p->table = -1;
}

static int read_record(int fd, struct handover *h)
{
	__do_free char *buf = NULL;
	off_t size = lseek(fd, 0, SEEK_END);

	if (size <= 0 || size > HANDOVER_MAX_BYTES)
		return -EINVAL;
	if (!(buf = malloc((size_t)size)))
		return -ENOMEM;
	if (pread(fd, buf, (size_t)size, 0) != size)
		return -EIO;
	return handover_decode(buf, (size_t)size, h);
}

/* The record named by HANDOVER_ENV, closed. 1 if there is none. */
static int take_record(struct handover *h)
{
	const char *v = getenv(HANDOVER_ENV);
	__do_close int fd = v ? atoi(v) : -1;
	int r;

	if (fd < 3)
		return 1;
	if ((r = read_record(fd, h)))
		log_warn("hand-over record: %s: reading the variables beside it", strerror(-r));
	return r ? 1 : 0;
}

/* A fd the record names that is not open (a damaged record) is none. */
static void claim(int *fd)
{
	if (*fd >= 0 && fcntl(*fd, F_SETFD, FD_CLOEXEC))
		*fd = -1;
}

int handover_take(struct handover *h)
{
	int r = take_record(h);

	if (r == 0)
		handover_drop_legacy();
	else
		r = handover_from_legacy(h);
	claim(&h->session_fd);
	claim(&h->pidns_fd);
	claim(&h->ready_fd);
	claim(&h->rings_fd);
	claim(&h->nodes_fd);
	claim(&h->control_fd);
	claim(&h->successor_fd);
	for (size_t i = 0; i < h->nmounts; i++)
		mount_slot_keep_fds(h->mounts[i]);
	return r;
}
