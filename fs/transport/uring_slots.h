/* The ring entries' buffers, in memory that every server of a mount shares.
 *
 * The kernel keeps, for each ring entry, the addresses of its header and
 * payload buffers, and writes a request there when it hands the entry one. The
 * supervisor holds these buffers in a memfd for the life of the mount and maps
 * it before it forks servers, so every server of the mount has them at the same
 * addresses. A mount handed over is served by servers the supervisor executes,
 * and an upgrade or a takeover hands the memfd on to the next supervisor: each
 * maps it at the address the first chose. A server that starts after one died
 * or stopped finds in them what the kernel had handed the one before, and
 * answers it (uring.c): a request that one never took is served (an upgrade's
 * too: the kernel may hand a request to an entry until its ring is closed), one
 * it took ends with ECONNABORTED as over /dev/fuse, a reply it wrote is
 * committed. */
#ifndef PROCFAST_URING_SLOTS_H
#define PROCFAST_URING_SLOTS_H

#include <stdatomic.h>
#include <stdint.h>

#include "fs/transport/fuse_uring_abi.h"

/* libfuse 3.14 replies max_write 1 MiB and 256 pages: the kernel wants payload
 * buffers of at least max(8 KiB, max_write, max_pages pages). */
#define URING_PAYLOAD (1024 * 1024)

struct uring_slot {
	struct fuse_uring_req_header hdr;
	/* The request a server took and has not committed yet, or 0. */
	_Atomic uint64_t taken;
	char payload[URING_PAYLOAD] __attribute__((aligned(4096)));
};

/* What a slot holds when a server starts. */
enum slot_left {
	SLOT_EMPTY,    /* nothing: register it */
	SLOT_POSTED,   /* a request no server took: serve it */
	SLOT_TAKEN,    /* a request a dead server took: end it */
	SLOT_ANSWERED, /* a reply a dead server wrote, perhaps not committed: commit it */
};

/* A new memfd for a mount's slots (uring_slots_share lays it out), which a
 * supervisor holds for the life of the mount: -1 with errno on failure. */
int uring_slots_memfd(void);

/* Maps nqueues x per_queue slots, shared with the processes forked after;
 * again in a process that has them already, nothing. 0 or -errno. */
int uring_slots_reserve(unsigned nqueues, unsigned per_queue);

/* Maps nqueues x per_queue slots from the memfd fd, which every server of the
 * mount is handed: an empty one is sized and laid out here, one a server
 * before laid out is mapped where that server had it. 0, or -errno: -EEXIST
 * where something of ours is there already, -EINVAL for another shape. */
int uring_slots_share(int fd, unsigned nqueues, unsigned per_queue);

/* Whether the connection's INIT chose io_uring, as its first server found:
 * kept with the slots, so that a server after it starts rings only on a
 * connection that uses them. The kernel lets a server register rings on a
 * connection whose INIT chose /dev/fuse while enable_uring is Y, and refuses
 * their commits (EOPNOTSUPP) once it is N: every request on them would wait
 * for ever. */
enum conn_rings {
	CONN_RINGS_UNKNOWN, /* not told (no slots, or a release's before): try them */
	CONN_RINGS_UNUSED,
	CONN_RINGS_USED,
};
void uring_slots_set_conn_rings(enum conn_rings used);
enum conn_rings uring_slots_conn_rings(void);

/* The slots' shape; 0 queues before uring_slots_reserve. */
unsigned uring_slots_queues(void);
unsigned uring_slots_per_queue(void);
struct uring_slot *uring_slot_at(unsigned qid, unsigned index);

/* What s holds, and the commit id it names. */
enum slot_left uring_slot_left(struct uring_slot *s, uint64_t *commit_id);

#endif
