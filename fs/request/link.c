/* Links: their texts (the mirrored ones, the caller-relative "self" links),
 * and the hidden targets of relative link texts ("socket:[N]", "pipe:[N]", "net:[N]"...).
 *
 * Over FUSE an fd entry can only be a plain symlink. The kernel resolves its
 * relative text inside the link's directory, so answering that lookup (it is
 * never listed) with the real target's attributes gives stat() callers such
 * as lsof and ps the true type, inode, size and rdev.
 */
#include "fs/request/link.h"

#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache/index/pid_view.h"
#include "cache/nodes/link_hints.h"
#include "fs/caller/caller.h"
#include "fs/caller/source_op.h"
#include "fs/entries/dedup.h"
#include "fs/entries/name_class.h"
#include "fs/lib/proc_names.h"
#include "fs/lib/settings.h"
#include "fs/request/node_life.h"

static int link_text(const char *path, char *buf, size_t len)
{
	ssize_t n = source_readlink(path, buf, len - 1);

	if (n < 0)
		return (int)n;
	buf[n] = '\0';
	return 0;
}

static int link_has_text(const char *path, const char *text)
{
	char buf[PATH_MAX];

	return link_text(path, buf, sizeof(buf)) == 0 && !strcmp(buf, text);
}

/* Targets the kernel can take as they are, and the policy for the others:
 * - anon inodes (eventfd, epoll, ...) have no file type, which FUSE refuses
 *   with EIO; they are shown as regular files of size 0 with their inode;
 * - a pipe keeps its FIFO type for stat(), but the kernel would open a FIFO
 *   inode with fifo_open() without asking the daemon and wait forever for a
 *   writer; its permission bits are cleared and its owner made unmappable so
 *   that open() fails at once with EACCES, for root too (default_permissions).
 */
void link_target_fixup(struct stat *st)
{
	switch (st->st_mode & S_IFMT) {
	case 0:
		st->st_mode |= S_IFREG;
		break;
	case S_IFIFO:
		st->st_mode = S_IFIFO;
		st->st_uid = (uid_t)-1;
		st->st_gid = (gid_t)-1;
		break;
	}
}

static int target_at(const char *path, struct stat *st)
{
	int r = source_stat(path, st, 0);

	if (r)
		return r;
	link_target_fixup(st);
	return 0;
}

/* A text that names one object by its inode ("socket:[159173]",
 * "net:[4026531840]": pseudo filesystems' d_dname), and st is another
 * object's: the link changed between its readlink and the stat. */
static int other_object(const char *text, const struct stat *st)
{
	const char *open = strstr(text, ":[");
	char *end;
	unsigned long long ino;

	if (!name_is_one_object(text))
		return 0;
	errno = 0;
	ino = strtoull(open + 2, &end, 10);
	return !errno && !strcmp(end, "]") && ino != (unsigned long long)st->st_ino;
}

int link_target_stat(const struct node *n, struct stat *st)
{
	int r;

	if (!link_has_text(n->path, n->name))
		return -ENOENT;
	if ((r = target_at(n->path, st)))
		return r;
	if ((st->st_mode & S_IFMT) != n->type || other_object(n->name, st))
		return -ENOENT;
	return node_alive(n);
}

static int try_entry(const struct node *dir, const char *entry, const char *text, char *path,
		     size_t len, struct stat *st)
{
	int r;

	if (child_path(dir, entry, path, len) || !link_has_text(path, text))
		return -ENOENT;
	if ((r = target_at(path, st)))
		return r;
	return other_object(text, st) ? -ENOENT : 0;
}

/* The kernel asks for a link text only while it follows that link, right
 * after the same thread's readlink (link_hints.h), which names the link:
 * one readlink and one stat, however many links dir holds. Without such a
 * readlink the name is what procfs has, no entry: ENOENT, never a scan
 * (one per lookup of a made-up name, O(fds) for anyone who may list a
 * directory of many links). */
int link_target_find(const struct node *dir, pid_t tid, const char *name, char *path,
		     size_t len, struct stat *st)
{
	char entry[LINK_HINT_NAME_MAX];

	if (link_hint_get(tid, dir->serial, name, entry))
		return -ENOENT;
	return try_entry(dir, entry, name, path, len, st);
}

int link_mirror_text(const struct node *n, pid_t tid, char *buf, size_t len)
{
	int r = link_text(n->path, buf, len);

	/* procfs's readlink of a link whose process is gone (held, or looked
	 * up before the exit) says ENOENT, not the ESRCH of its directory. */
	if (node_gone(n))
		return -ENOENT;
	if ((r = node_error(n, r)))
		return r;
	if (buf[0] != '/' && name_is_link_text(buf))
		link_hint_put(tid, n->parent_serial, n->name, buf);
	return 0;
}

int link_caller_text(const struct node *n, const struct caller *c, char *buf, size_t len)
{
	pid_t tgid = caller_tgid(c), tid;

	if (!tgid)  /* out of fds is no answer, but not "no such process" */
		return errno == ENOENT ? -ENOENT : -errno;
	tgid = pid_view_from_daemon(tgid);
	tid = pid_view_from_daemon(c->tid);
	if (!tgid || !tid)
		return -ENOENT;
	if (!strcmp(n->name, "self"))
		snprintf(buf, len, "%d", tgid);
	else
		snprintf(buf, len, "%d/task/%d", tgid, tid);
	return 0;
}
