/* Snapshots made at open (snapshot.h). */
#include "fs/request/snapshot.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache/nodes/node.h"
#include "fs/entries/name_class.h"
#include "fs/lib/cleanup.h"
#include "fs/lib/clock.h"
#include "fs/lib/fuse_passthrough.h"
#include "fs/lib/settings.h"
#include "fs/request/snapshot_pool.h"

#define SNAPSHOT_MAX (4 << 20)
#define CHUNK (64 << 10)
/* How long an open waits for the RELEASE of an earlier snapshot open of its
 * inode, and how often it looks. */
#define RELEASE_WAIT_NS (1000 * 1000)
#define RELEASE_LOOK_NS (20 * 1000)
#define RELEASE_SPIN_NS (100 * 1000)

static int eligible(const struct node *n, const struct open_file *of, int flags)
{
	/* A fixed node (the root's files: meminfo...) keeps its name for good
	 * (node.h), so another's open could not be moved off it (snapshot_met). */
	if (!pf.snapshot || (flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC) ||
	    n->kind != NODE_MIRROR || n->type != S_IFREG || n->serial <= NODE_FIXED_MAX ||
	    (n->cls->flags & NC_NO_SNAPSHOT))
		return 0;
	/* a stream (no pread): reading it whole would take what the reader reads */
	return of->via_helper || pread(of->head.fd, NULL, 0, 0) == 0 || errno != ESPIPE;
}

static int write_all(int fd, const char *buf, size_t len)
{
	ssize_t n;

	for (; len; buf += n, len -= (size_t)n)
		if ((n = write(fd, buf, len)) <= 0)
			return -1;
	return 0;
}

/* The opener's text from offset 0 to its end, into fd: 0, or -1 where the
 * exact path must serve. */
static int make(struct request *rq, struct open_file *of, snapshot_read_fn read, int fd)
{
	__do_free char *buf = malloc(CHUNK);
	off_t off = 0;
	ssize_t got;

	if (!buf)
		return -1;
	while ((got = read(rq, of, buf, CHUNK, off)) > 0) {
		if (off + got > SNAPSHOT_MAX || write_all(fd, buf, (size_t)got))
			return -1;
		off += got;
	}
	return got < 0 ? -1 : 0;
}

static int contended(const struct node *n)
{
	const struct node *dir = node_from_ino(n->parent_serial);

	return !dir || atomic_load(&dir->snapshot_contended);
}

/* Takes n's one snapshot place. A file closed and opened again at once (a
 * tool's loop, psutil's calls that each read PID/stat) finds its inode still
 * held: the kernel sends the close's RELEASE without waiting for it, and
 * another worker may not have served it yet when this OPEN comes. The
 * kernel has let that backing file go before it sent the RELEASE, so the
 * place is free as soon as the RELEASE is served: waiting for it briefly
 * keeps the file a snapshot, where giving up would move this open to a new
 * inode (snapshot_met) and end snapshots in its directory. A file another
 * opener holds open stays held: the wait ends bounded, once a directory. */
static int hold_inode(struct node *n)
{
	uint64_t start = 0, waited;
	bool free_inode = false;

	while (!atomic_compare_exchange_strong(&n->snapshot_held, &free_inode, true)) {
		free_inode = false;
		if (!start)
			start = now_ns();
		if ((waited = now_ns() - start) >= RELEASE_WAIT_NS)
			return 0;
		/* the RELEASE takes a few µs to serve: yield to it (it may wait
		 * for this CPU) before sleeping, which costs a timer's slack */
		if (waited < RELEASE_SPIN_NS)
			sched_yield();
		else
			nanosleep(&(struct timespec){ .tv_nsec = RELEASE_LOOK_NS }, NULL);
	}
	return 1;
}

int snapshot_take(struct request *rq, struct open_file *of, int flags, snapshot_read_fn read)
{
	struct node *n = rq->node;
	int id;

	if (!eligible(n, of, flags) || contended(n) || !hold_inode(n))
		return 0;
	/* Only the open in hand: another one, of the exact path, may not have
	 * reached the kernel yet, which would fail it beside this one. It looks
	 * at snapshot_held after counting itself, this looks at the count after
	 * holding: one of the two sees the other (snapshot_met). */
	if (atomic_load(&n->opens) != 1) {
		atomic_store(&n->snapshot_held, false);
		return 0;
	}
	__do_close int fd = snapshot_pool_take(&id);

	if (fd < 0 || make(rq, of, read, fd)) {
		if (fd >= 0) /* it holds part of a text: never another's */
			passthrough_unregister(id);
		atomic_store(&n->snapshot_held, false);
		return 0;
	}
	/* what a READ would have made is in the memfd now */
	free(of->made_text);
	of->made_text = NULL;
	return of->snapshot_id = id;
}

int snapshot_met(struct node *n)
{
	struct node *dir;

	if (!atomic_load(&n->snapshot_held))
		return 0;
	if ((dir = node_from_ino(n->parent_serial)))
		atomic_store(&dir->snapshot_contended, true);
	node_unname(n);
	return 1;
}

static void hold_inherited(const struct node *n, void *arg)
{
	(void)arg;
	if (n->type == S_IFREG && n->kind == NODE_MIRROR)
		atomic_store(&((struct node *)n)->snapshot_held, true);
}

void snapshot_inherited(void)
{
	node_for_each(hold_inherited, NULL);
}
