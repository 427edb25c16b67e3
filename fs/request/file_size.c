/* The size the kernel holds of a regular file.
 *
 * procfs says size 0 of its files and makes their content when read. Over
 * FUSE the kernel's splice_read for direct-io files (sendfile, splice:
 * BusyBox's and uutils' cat) goes through the page cache, up to Linux 6.18 at
 * least (before the upstream "use copy_splice_read() for FOPEN_DIRECT_IO
 * files"): it stops at the size the kernel holds, without asking, so with 0
 * every sendfile read nothing. The page cache is shared by every reader of
 * the inode while procfs's content differs by reader, so content never
 * enters it: a read for the page cache is refused with EINVAL (file.c), as
 * procfs refuses splice on most of its files, and callers fall back to
 * read(). Only the question must reach the daemon: the kernel must hold a
 * size above 0, while stat shows procfs's 0 (wc -c, tail, cp and tar treat a
 * procfs file by its size).
 *
 * Two properties of the kernel's FUSE client make both hold. A notification
 * that stores data beyond the end grows the size it holds (one byte, off a
 * page's start: no page becomes whole, nothing is read from the cache). And
 * an attribute reply to a request sent before such a change is shown to the
 * caller but not taken as the inode's. So: before an open, where the kernel
 * took a size of 0, a byte is stored far beyond; while the file is open, a
 * byte is stored further before each attribute reply (fstat by the opener),
 * which the kernel then shows without taking its size. An lseek to the end
 * is answered with 0 and taken, as procfs's files end there for it.
 */
#include "fs/request/file_size.h"

#include <stdatomic.h>
#include <sys/stat.h>

#include "fs/request/invalidate.h"

/* Far beyond any procfs content, each store one byte further. */
#define HIDDEN_SIZE_START ((1LL << 30) + 1)
#define PAGE 4096

int file_size_hidden(const struct node *n)
{
	return n->type == S_IFREG && n->kind == NODE_MIRROR;
}

/* Grows the kernel's size of n: each call one byte past the last, never at a
 * page's start. */
static void store_beyond(struct node *n)
{
	int64_t at = atomic_fetch_add(&n->hidden_size, 1);

	if (at < HIDDEN_SIZE_START) { /* the first: from the start */
		atomic_store(&n->hidden_size, HIDDEN_SIZE_START + 1);
		at = HIDDEN_SIZE_START;
	}
	if (at % PAGE == 0)
		at = atomic_fetch_add(&n->hidden_size, 1);
	if (invalidate_store_byte(n, at) == 0)
		atomic_store(&n->size_taken, false);
}

void file_size_before_reply(struct node *n, int for_fd)
{
	if (!file_size_hidden(n))
		return;
	if (!for_fd && atomic_load(&n->opens) > 0)
		store_beyond(n);
	else
		atomic_store(&n->size_taken, true);
}

void file_size_opening(struct node *n)
{
	if (!file_size_hidden(n))
		return;
	atomic_fetch_add(&n->opens, 1);
	if (atomic_load(&n->size_taken))
		store_beyond(n);
}

void file_size_released(struct node *n)
{
	if (file_size_hidden(n))
		atomic_fetch_sub(&n->opens, 1);
}
