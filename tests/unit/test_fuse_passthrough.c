/* fs/lib/fuse_passthrough.c: the INIT and OPEN replies as libfuse writes them
 * (the kernel's structures of Debian 12's headers, 7.37: max_stack_depth and
 * backing_id, 7.40, sit in what they call unused and padding), patched as the
 * kernel of 6.9+ reads them. The offsets were once wrong by four bytes: the
 * kernel then took no passthrough and said nothing. */
#include <assert.h>
#include <linux/fuse.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>

#include "fs/lib/fuse_passthrough.h"

#define PASSTHROUGH_FLAG2 (1u << (37 - 32)) /* FUSE_PASSTHROUGH, in flags2 */
#define FOPEN_PASSTHROUGH_FLAG (1u << 7)

static void init_reply(void)
{
	struct fuse_out_header h = { .unique = 2 };
	struct fuse_init_out o = { .major = 7, .minor = 31, .flags = FUSE_ASYNC_READ, .flags2 = 1 };
	struct iovec iov[2] = { { &h, sizeof(h) }, { &o, sizeof(o) } };

	passthrough_ask_init(iov, 2);
	assert(o.flags & FUSE_INIT_EXT);
	assert(o.flags & FUSE_ASYNC_READ); /* what libfuse asked stays */
	assert(o.flags2 == (1u | PASSTHROUGH_FLAG2));
	assert(o.unused[0] == 1); /* max_stack_depth: memfds stack on nothing */
	assert(o.max_pages == 0 && o.map_alignment == 0 && o.unused[1] == 0);
	assert(passthrough_offered((uint64_t)PASSTHROUGH_FLAG2 << 32));
	assert(!passthrough_offered(FUSE_INIT_EXT));
}

static void open_reply(void)
{
	struct fuse_out_header h = { .unique = 4 };
	struct fuse_open_out o = { .fh = 0x1234, .open_flags = FOPEN_DIRECT_IO };
	struct iovec iov[2] = { { &h, sizeof(h) }, { &o, sizeof(o) } };

	/* no snapshot named: untouched */
	passthrough_patch_open(iov, 2);
	assert(o.open_flags == FOPEN_DIRECT_IO && o.padding == 0);
	/* one: a passthrough of that backing id, read by the kernel (no direct io) */
	passthrough_reply_next(42);
	passthrough_patch_open(iov, 2);
	assert(o.fh == 0x1234 && o.open_flags == FOPEN_PASSTHROUGH_FLAG && o.padding == 42);
	/* consumed: the next reply of the thread is not one */
	o.open_flags = FOPEN_DIRECT_IO;
	o.padding = 0;
	passthrough_patch_open(iov, 2);
	assert(o.open_flags == FOPEN_DIRECT_IO && o.padding == 0);
	/* a reply of another size (an error's, a write's) is never taken for one */
	passthrough_reply_next(42);
	iov[1].iov_len = 8;
	passthrough_patch_open(iov, 2);
	assert(o.open_flags == FOPEN_DIRECT_IO && o.padding == 0);
}

int main(void)
{
	init_reply();
	open_reply();
	puts("fuse passthrough: ok");
	return 0;
}
