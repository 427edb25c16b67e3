/* The size of a regular file.
 *
 * procfs reports st_size 0 and makes the content when it is read. Over FUSE
 * the kernel's splice_read for direct-io files (sendfile, splice: BusyBox's
 * and uutils' cat) goes through the page cache, up to Linux 6.18 at least
 * (the upstream "use copy_splice_read() for FOPEN_DIRECT_IO files"): it
 * stops at the size the kernel holds, without asking, so with 0 every
 * sendfile read nothing. The page cache is shared by every reader of the
 * inode while procfs's content differs by reader, so content never enters
 * it: a read for the page cache is refused with EINVAL (file.c), as procfs
 * refuses splice on most of its files, and callers fall back to read().
 *
 * For that refusal to be asked at all, the kernel must hold a size above 0.
 * A regular file's size is therefore the length of its content as the
 * caller who asks reads it (LXCFS does the same), never cached, since it
 * differs by caller: wc -c, tail, cp and tar see the file as it is. A lookup
 * tells a size no one sees (its attributes expire at once). Opaque files
 * (kcore, kmsg, pagemap, mem: binary, huge, or consumed by reading) keep
 * procfs's attributes.
 */
#include "fs/ops/file_size.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "fs/cleanup.h"
#include "fs/ops/invalidate.h"
#include "fs/ops/name_class.h"
#include "fs/ops/ns_helper.h"
#include "fs/ops/self_state.h"
#include "fs/ops/settings.h"

/* Longer contents are reported at this length. */
#define FILE_SIZE_MAX (4LL << 20)

int file_size_is_content(const struct node *n)
{
	return n->type == S_IFREG && n->kind == NODE_MIRROR && !(n->cls->flags & NC_OPAQUE);
}

struct counted {
	const struct node *n;
	const struct caller *c;
	int fd;                /* or -1: through the caller's helper */
	struct ns_helper *helper;
};

static ssize_t read_for(void *ctx, char *buf, size_t size, off_t off)
{
	struct counted *k = ctx;
	ssize_t got;

	if (k->fd < 0)
		return ns_helper_read(k->helper, k->c->tid, k->n->path, O_RDONLY | O_NONBLOCK, buf,
				      size, off);
	got = pread(k->fd, buf, size, off);
	return got < 0 ? -errno : got;
}

/* A text that shows its reader's own state is read whole and measured as
 * the reader gets it (self_state.c); others are only counted. */
static off_t count(struct counted *k)
{
	char buf[16384];
	off_t len = 0;
	ssize_t got;

	if (self_state_applies(k->n, k->c->tid)) {
		__do_free char *text = NULL;

		got = self_state_text(k->n, &text, read_for, k);
		return got < 0 ? 0 : got;
	}
	while (len < FILE_SIZE_MAX && (got = read_for(k, buf, sizeof(buf), len)) > 0)
		len += got;
	return len;
}

off_t file_size_count(const struct node *n, const struct caller *c, int fd)
{
	struct counted k = { n, c, fd, NULL };
	__do_close int own = -1;
	off_t len;

	if (fd >= 0)
		return count(&k);
	if (c->ns.foreign) {
		if ((c->ns.foreign & RNS(RNS_PID)) || !(k.helper = ns_helper_get(c->tid)))
			return 0;
		len = count(&k);
		ns_helper_put(k.helper);
		return len;
	}
	/* never waits: a read that would block counts as the end */
	own = openat(pf.srcfd, n->path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
	if (own < 0)
		return 0;
	k.fd = own;
	return count(&k);
}

void file_size_told(struct node *n, off_t size)
{
	atomic_store(&n->size_told, size);
}

void file_size_before_open(struct node *n)
{
	if (!file_size_is_content(n) || atomic_load(&n->size_told) > 0)
		return;
	if (invalidate_raise_size(n, FILE_SIZE_UNTOLD) == 0)
		atomic_store(&n->size_told, FILE_SIZE_UNTOLD);
}
