/* Whether a node's process still lives, and what a request answers when
 * it does not (node_life.h). */
#include "fs/request/node_life.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "cache/index/pidgen.h"
#include "fs/entries/name_class.h"
#include "fs/request/invalidate.h"

int child_path(const struct node *parent, const char *name, char *buf, size_t len)
{
	int n = parent->kind == NODE_ROOT ? snprintf(buf, len, "%s", name)
					  : snprintf(buf, len, "%s/%s", parent->path, name);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* ESRCH, as procfs answers inside the directory of a process that is gone
 * (or whose pid now names another process); ENOENT inside a thread's. */
int node_alive(const struct node *n)
{
	int r;

	if (!n->owner.pid || !(r = pidgen_check(n->owner.pid, n->owner.gen)))
		return 0;
	if (r != -ENOENT)
		return r; /* cannot tell (EMFILE): say why */
	return strstr(n->path, "/task/") ? -ENOENT : -ESRCH;
}

int node_lookup_gone(const struct node *dir, int alive)
{
	if (alive != -ESRCH && alive != -ENOENT)
		return alive;
	return dir->cls->flags & NC_WALK_ASKS_TASK ? -ESRCH : -ENOENT;
}

/* The kernel caches a process's name at the root until the exit event drops
 * it (invalidate.c), and the pid may name a new process before that event is
 * handled. procfs checks its names on every walk (pid_revalidate), so there a
 * walk by path reaches the new process, or ENOENT. Here, the first request to
 * find the process gone drops the name itself (invalidate.h) and answers
 * ESTALE: the VFS then walks the path once more, asking us for every name on
 * it. Requests after it (a walk from a held descriptor of the gone process
 * comes back to the same nodes) get procfs's answer. */
int node_walk_error(struct node *n, int r)
{
	struct node *dir;

	/* n's own process was just asked about (pidgen memo): a name absent
	 * from a live process costs nothing more. */
	if ((r != -ESRCH && r != -ENOENT) || !node_gone(n))
		return r;
	dir = node_process_dir(n);
	if (!dir || atomic_load(&dir->name_dropped) || (dir != n && !node_gone(dir)))
		return r;
	return invalidate_found_gone(dir) ? r : -ESTALE;
}
