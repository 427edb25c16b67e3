/* Handing a mount over to a running daemon: the socket, both sides. */
#ifndef PROCFAST_CONTROL_H
#define PROCFAST_CONTROL_H

#include <stddef.h>
#include <sys/types.h>

/* A mount handed over, as the daemon received it. */
struct join_request {
	int conn;         /* to answer on (control_answer), or -1 */
	int fuse_fd;      /* the mount's session fd */
	int nsfd;         /* the pidns= file, or -1 */
	char *mountpoint; /* absolute, in the sender's mount namespace */
	pid_t sender;     /* the sending process, as the socket saw it */
	char **argv;      /* the sender's command line, NULL-terminated */
	char *buf;        /* holds the strings */
	int successor;    /* not a mount: a daemon to take ours over (takeover.h) */
};

/* The daemon's listening socket at path (no access for group or others), taking over a socket
 * file no daemon answers on any more. fd or -errno. */
int control_listen(const char *path);

/* Takes one hand-over from the listening socket. 0, or -errno once the
 * sender was answered with it. */
int control_accept(int lfd, struct join_request *r);

/* Answers a sender (0: served) and closes the connection. */
void control_answer(int conn, int err);

void join_request_free(struct join_request *r);

/* The payload as received (len bytes of buf): the mount point, then the
 * command line, each NUL-terminated. Points r->mountpoint and r->argv (which
 * it allocates) into buf. 0, or -EINVAL for anything else. */
int control_parse_payload(char *buf, size_t len, struct join_request *r);

/* The sending side: hands the mount at mountpoint over to the daemon at
 * path and waits for its answer. 0 once served, else -errno. */
int control_hand_over(const char *path, int fuse_fd, int nsfd, const char *mountpoint,
		      int argc, char **argv);

#endif
