/* A FUSE connection as the kernel shows it: whether it is gone, its number
 * under fusectl (/sys/fs/fuse/connections/N), and its abort. */
#ifndef PROCFAST_FUSE_CONN_H
#define PROCFAST_FUSE_CONN_H

/* Whether the connection of session fd fd is over (unmounted, or aborted). */
int fuse_conn_gone(int fd);

/* The fusectl number of the FUSE mount at path, read without a request to its
 * server (which may be dead); 0 where path is no FUSE mount, or there is no
 * fusectl to be had (fs/lib/fusectl.h). */
unsigned fuse_conn_number(const char *path);

/* Ends the connection numbered conn, which session fd fd belongs to: every
 * request it holds ends with ECONNABORTED, and any later one with ENOTCONN.
 * Nothing once the connection is gone: its number may be another's by then. */
void fuse_conn_abort(int fd, unsigned conn);

#endif
