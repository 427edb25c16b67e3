/* -o snapshot: an open's whole content, made at the open as its opener, in a
 * memfd the kernel then reads itself (FUSE passthrough): no READ request,
 * one round trip for open, read and close, sendfile included.
 *
 * The trade, which is why it is only an option: a file held open and read
 * again shows the content of its open (top, free -s and sysinfo keep files
 * open). Nothing is shared: each open has its own memfd, made for its own
 * opener by the same reads the exact path makes. */
#ifndef PROCFAST_SNAPSHOT_H
#define PROCFAST_SNAPSHOT_H

#include <sys/types.h>

#include "fs/request/open_file.h"
#include "fs/request/request.h"

/* What the opener's read of of at off gives it (file.c's exact path). */
typedef ssize_t (*snapshot_read_fn)(struct request *rq, struct open_file *of, char *buf,
				    size_t size, off_t off);

/* Makes of's snapshot for an open with the kernel's flags: the backing id to
 * reply with (of->snapshot_id, dropped by open_file_close), or 0 where the
 * open stays on the exact path: a write, a file read at its offsets (mem,
 * kmsg: NC_NO_SNAPSHOT) or as a stream, one whose read fails (the reader
 * sees the error at its read, as from procfs), one over 4 MiB, or an inode
 * that has a snapshot open already (the kernel allows one backing file an
 * inode: a second would fail the open with EIO). */
int snapshot_take(struct request *rq, struct open_file *of, int flags, snapshot_read_fn read);

/* Whether an open of n that is no snapshot meets another's snapshot open on
 * it. The kernel would fail it (EIO: every open of an inode with a backing
 * file must be a passthrough of that file), so it is answered ESTALE, which
 * makes the kernel walk the path again with a LOOKUP of each name (VFS
 * LOOKUP_REVAL): n's name is taken off first (node_unname), so that the
 * lookup gives a new node, a new inode, and the open is made there. Its
 * directory takes no more snapshots (the new node must not become another's
 * before this open reaches it). */
int snapshot_met(struct node *n);

/* A server that took a connection over: the kernel may hold files of the
 * nodes it inherited open as an earlier server's snapshots. */
void snapshot_inherited(void);

#endif
