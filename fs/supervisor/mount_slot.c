#include "fs/supervisor/mount_slot.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fs/lib/cleanup.h"
#include "fs/lib/log.h"
#include "fs/supervisor/exec_env.h"
#include "fs/transport/fuse_conn.h"

/* Read while the sender waits: its mount point is in its mount namespace. */
static unsigned sender_conn(const struct join_request *r)
{
	char path[PATH_MAX + 32];

	if (r->sender <= 0)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/root%s", (int)r->sender, r->mountpoint);
	return fuse_conn_number(path);
}

struct mount_slot *mount_slot_from_join(struct join_request *r)
{
	struct mount_slot *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	if (!(s->conn = sender_conn(r)))
		log_warn("cannot tell the FUSE connection of %s: if given up, it is not aborted",
			 r->mountpoint);
	s->join = *r;
	s->fd = r->fuse_fd;
	s->ready_rd = s->rings_fd = s->nodes_fd = -1;
	memset(r, 0, sizeof(*r));
	r->conn = r->fuse_fd = r->nsfd = -1;
	return s;
}

void mount_slot_free(struct mount_slot *s, int err)
{
	if (!s)
		return;
	join_request_answer(s->join.conn, err);
	s->join.conn = -1;
	if (s->ready_rd >= 0)
		close(s->ready_rd);
	if (s->rings_fd >= 0)
		close(s->rings_fd);
	if (s->nodes_fd >= 0)
		close(s->nodes_fd);
	join_request_free(&s->join);
	free(s);
}

void mount_slot_keep_fds(struct mount_slot *s)
{
	fcntl(s->fd, F_SETFD, FD_CLOEXEC);
	if (s->join.nsfd >= 0)
		fcntl(s->join.nsfd, F_SETFD, FD_CLOEXEC);
	if (s->rings_fd >= 0)
		fcntl(s->rings_fd, F_SETFD, FD_CLOEXEC);
	if (s->nodes_fd >= 0)
		fcntl(s->nodes_fd, F_SETFD, FD_CLOEXEC);
}

void mount_slot_forget(struct mount_slot *s)
{
	s->fd = s->join.fuse_fd = s->join.nsfd = s->rings_fd = s->nodes_fd = -1;
	mount_slot_free(s, 0);
}

void mount_slot_hold_nodes(struct mount_slot *s)
{
	/* Without it (no memory) a server's successor answers its ids ESTALE. */
	if (s->nodes_fd < 0 && (s->nodes_fd = memfd_create("procfast-nodes", MFD_CLOEXEC)) < 0)
		log_warn("node record: %s", strerror(errno));
}

pid_t mount_slot_fork(struct mount_slot *s, int *ready_wr)
{
	int ready[2] = { -1, -1 };
	pid_t pid;

	/* Only a first server tells when it is set up: after that, the
	 * connection is. */
	if (!s->ready && s->ready_rd < 0 && pipe2(ready, O_CLOEXEC))
		return -1;
	pid = fork();
	if (pid == 0) {
		if (ready[0] >= 0)
			close(ready[0]);
		*ready_wr = ready[1];
		return 0;
	}
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
