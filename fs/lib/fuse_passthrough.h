/* FUSE passthrough (Linux 6.9+, CONFIG_FUSE_PASSTHROUGH): a file opened with
 * FOPEN_PASSTHROUGH is read by the kernel from a backing file the server
 * registered on its /dev/fuse fd, with no READ request. libfuse 3.14 knows
 * nothing of it, so the INIT and OPEN replies are patched on their way out
 * (fs/transport/transport.c) with the kernel's ABI, defined here.
 *
 * The kernel allows one backing file per inode at a time: an open that
 * names another while one is in use fails with EIO (fs/fuse/iomode.c), so
 * whoever registers must keep to one open per inode (fs/request/snapshot.c). */
#ifndef PROCFAST_FUSE_PASSTHROUGH_H
#define PROCFAST_FUSE_PASSTHROUGH_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

/* 0 when this kernel has FUSE passthrough; else -1 and why in why. */
int passthrough_probe(char *why, size_t len);

/* Whether the kernel's INIT offered it (its flags, flags2 in the high half). */
int passthrough_offered(uint64_t init_flags);

/* Asks for it in the INIT reply (iov as libfuse writes it). */
void passthrough_ask_init(struct iovec *iov, int count);

/* The connection's /dev/fuse fd, where backing files are registered. */
void passthrough_set_fd(int fuse_fd);

/* Registers fd as a backing file: its id (> 0), or -errno. */
int passthrough_register(int fd);
void passthrough_unregister(int id);

/* The calling thread's next OPEN reply names backing file id (0: none). */
void passthrough_reply_next(int id);

/* An OPEN reply being written by this thread: made a passthrough open of
 * the backing file passthrough_reply_next() named, which it consumes. */
void passthrough_patch_open(struct iovec *iov, int count);

#endif
