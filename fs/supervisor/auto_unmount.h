/* -o auto_unmount made safe against the order of a dead daemon's releases.
 *
 * libfuse's auto_unmount leaves fusermount3 running, holding a socket whose
 * other end the daemon keeps. When that end closes, fusermount3 opens the
 * mount point and unmounts it only if that answers ENOTCONN. A dying
 * daemon's exit releases the socket and /dev/fuse in an order the kernel
 * does not promise: when the socket goes first, fusermount3's open may wait
 * in the connection's queue, the release of /dev/fuse then ends it with
 * ECONNABORTED, and the dead mount stays for good (seen once in the suite).
 * So the daemon's end of the socket is held by a watcher process instead,
 * which closes it only once the mount answers ENOTCONN, is no longer this
 * mount, or is served again. */
#ifndef PROCFAST_AUTO_UNMOUNT_H
#define PROCFAST_AUTO_UNMOUNT_H

/* Before fuse_session_mount: the fds open now. */
void auto_unmount_before_mount(void);

/* After it: hands the socket libfuse kept for fusermount3 (the one socket
 * the mount opened) to a watcher of this process and closes it here. */
void auto_unmount_watch(const char *mountpoint);

#endif
