/* Handing a mount over to a running daemon: the socket, both sides. */
#ifndef PROCFAST_CONTROL_H
#define PROCFAST_CONTROL_H

#include <stddef.h>
#include <sys/types.h>

#include "fs/supervisor/join_request.h"

/* The daemon's listening socket at path (no access for group or others), taking over a socket
 * file no daemon answers on any more. fd or -errno. */
int control_listen(const char *path);

/* Takes one hand-over from the listening socket. 0, or -errno once the
 * sender was answered with it. */
int control_accept(int lfd, struct join_request *r);

/* The payload as received (len bytes of buf): the mount point, then the
 * command line, each NUL-terminated. Points r->mountpoint and r->argv (which
 * it allocates) into buf. 0, or -EINVAL for anything else. */
int control_parse_payload(char *buf, size_t len, struct join_request *r);

/* The sending side: hands the mount at mountpoint over to the daemon at
 * path and waits for its answer. 0 once served, else -errno. */
int control_hand_over(const char *path, int fuse_fd, int nsfd, const char *mountpoint,
		      int argc, char **argv);

#endif
