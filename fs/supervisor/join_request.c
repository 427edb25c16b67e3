/* A mount handed over (join_request.h). */
#include "fs/supervisor/join_request.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fs/lib/log.h"

void join_request_answer(int conn, int err)
{
	if (conn < 0)
		return;
	if (send(conn, &err, sizeof(err), MSG_NOSIGNAL) < 0)
		log_warn("could not answer a hand-over: %s", strerror(errno));
	close(conn);
}

void join_request_free(struct join_request *r)
{
	if (r->conn >= 0)
		close(r->conn);
	if (r->fuse_fd >= 0)
		close(r->fuse_fd);
	if (r->nsfd >= 0)
		close(r->nsfd);
	free(r->argv);
	free(r->buf);
	memset(r, 0, sizeof(*r));
	r->conn = r->fuse_fd = r->nsfd = -1;
}
