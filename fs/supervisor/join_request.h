/* A mount handed over to a running daemon, as it received it (control.c),
 * and what holds one (mount_slot.c): apart from control.h so that a slot
 * need not know the socket. */
#ifndef PROCFAST_JOIN_REQUEST_H
#define PROCFAST_JOIN_REQUEST_H

#include <sys/types.h>

/* A mount handed over, as the daemon received it. */
struct join_request {
	int conn;         /* to answer on (join_request_answer), or -1 */
	int fuse_fd;      /* the mount's session fd */
	int nsfd;         /* the pidns= file, or -1 */
	char *mountpoint; /* absolute, in the sender's mount namespace */
	pid_t sender;     /* the sending process, as the socket saw it */
	char **argv;      /* the sender's command line, NULL-terminated */
	char *buf;        /* holds the strings */
	int successor;    /* not a mount: a daemon to take ours over (takeover.h) */
};

/* Answers a sender (0: served) and closes the connection. */
void join_request_answer(int conn, int err);

void join_request_free(struct join_request *r);

#endif
