/* Filling a READDIR or READDIRPLUS reply (see dir_reply.h). */
#include "fs/request/dir_reply.h"

#include <errno.h>
#include <string.h>

#include "fs/entries/name_class.h"
#include "fs/lib/settings.h"
#include "fs/lib/thread_buf.h"
#include "fs/request/entry.h"

void dir_reply_init(struct dir_reply *r, fuse_req_t req, struct node *dir, size_t size, int plus)
{
	r->req = req;
	r->dir = dir;
	r->out = thread_buf(BUF_REPLY, size);
	r->size = r->out ? size : 0;
	r->used = 0;
	r->plus = plus;
	r->lookups = plus && dir && (dir->cls->flags & NC_LIST_PLUS);
	r->nlooked = 0;
}

/* The entry's lookup, as a LOOKUP would answer it; none (node id 0) where
 * the directory's entries carry none, or the name is gone already. */
static void entry_of(struct dir_reply *r, const char *name, struct fuse_entry_param *e)
{
	if (r->lookups && r->nlooked < DIR_REPLY_LOOKUPS &&
	    entry_lookup(r->dir, name_classify(r->dir->cls, name), name, e) == 0) {
		r->looked[r->nlooked++] = e->ino;
		return;
	}
	e->ino = 0;
	e->generation = 0;
	e->attr_timeout = e->entry_timeout = 0;
}

int dir_reply_add(struct dir_reply *r, const char *name, unsigned char type, ino_t ino,
		  off_t next)
{
	struct fuse_entry_param e;
	size_t need;

	if (!r->plus) {
		struct stat st = { .st_ino = ino, .st_mode = (mode_t)type << 12 };

		need = fuse_add_direntry(r->req, r->out + r->used, r->size - r->used, name, &st, next);
	} else {
		if (fuse_add_direntry_plus(r->req, NULL, 0, name, NULL, 0) > r->size - r->used)
			return 0;
		memset(&e, 0, sizeof(e));
		entry_of(r, name, &e);
		if (!e.ino) {
			e.attr.st_ino = ino;
			e.attr.st_mode = (mode_t)type << 12;
		}
		need = fuse_add_direntry_plus(r->req, r->out + r->used, r->size - r->used, name, &e,
					      next);
	}
	if (need > r->size - r->used)
		return 0;
	r->used += need;
	return 1;
}

void dir_reply_send(struct dir_reply *r, int err)
{
	if (!r->out)
		err = -ENOMEM;
	if (err < 0 && !r->used) {
		fuse_reply_err(r->req, -err);
		return;
	}
	if (fuse_reply_buf(r->req, r->out, r->used) != -ENOENT)
		return;
	/* interrupted: the kernel never had the entries' lookups */
	for (size_t i = 0; i < r->nlooked; i++)
		node_forget(node_from_ino(r->looked[i]), 1);
}
