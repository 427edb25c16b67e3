/* Per-thread fd/ and fdinfo/ as links to the leader's (seeds/004).
 *
 * Every /proc/PID/task/TID/fd is a full copy of the leader's table although
 * the threads share one files_struct: walking a process with 1,000 threads
 * and 1,000 files visits two million entries. While a thread's file table is
 * the leader's (kcmp KCMP_FILES == 0) and it is owned as the leader is, its
 * fd and fdinfo are symlinks with the text "../../fd" / "../../fdinfo"; a
 * thread with its own table (after unshare(CLONE_FILES)) or its own ids keeps
 * real directories. A non-leader thread looked up at the root shows "task"
 * as a link to "../TGID/task", so walking it does not build a second copy
 * of every thread. A thread's net/ (about half of
 * what is left of a thread's directory) links to the leader's while both
 * are in one network namespace. The checks run as the caller: where they
 * are refused, real directories are served (correctness first).
 */
#include "fs/entries/dedup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/kcmp.h>

#include "cache/index/pid_view.h"
#include "cache/index/pidgen.h"
#include "fs/entries/name_class.h"
#include "fs/lib/proc_names.h"
#include "fs/lib/procfile.h"
#include "fs/lib/settings.h"

/* "P/task/T" → P and T (either may be NULL). */
int node_is_thread_dir(const struct node *dir, pid_t *tgid, pid_t *tid)
{
	pid_t p, t;
	const char *rest;

	if (dir->kind != NODE_MIRROR || !(rest = thread_path_split(dir->path, &p, &t)) || *rest)
		return 0;
	if (tgid)
		*tgid = p;
	if (tid)
		*tid = t;
	return 1;
}

/* kcmp takes the daemon's pids. */
static int shares_files(pid_t a, pid_t b)
{
	pid_t da = pid_view_to_daemon(a), db = pid_view_to_daemon(b);

	return da && db && syscall(SYS_kcmp, da, db, KCMP_FILES, 0, 0) == 0;
}

/* A task's fd/ and fdinfo/ are owned as its directory is (procfs's
 * task_dump_owner: its own ids where it is dumpable), and a thread may have
 * ids of its own (a raw setresuid): a link shows the leader's directory,
 * so only where the two are owned alike. */
static int owned_alike(pid_t p, pid_t t)
{
	char path[48];
	struct stat a, b;

	snprintf(path, sizeof(path), "%d", p);
	if (fstatat(pf.srcfd, path, &a, 0))
		return 0;
	snprintf(path, sizeof(path), "%d/task/%d", p, t);
	return fstatat(pf.srcfd, path, &b, 0) == 0 && a.st_uid == b.st_uid && a.st_gid == b.st_gid;
}

/* A thread's fd/ and fdinfo/ are the leader's while they list one table
 * and are owned alike. */
static int files_alike(pid_t p, pid_t t)
{
	return shares_files(p, t) && owned_alike(p, t);
}

/* The thread group of a thread id looked up at the root; 0 for a leader. */
static pid_t group_of_thread(const struct node *dir)
{
	pid_t tgid;

	if (dir->kind != NODE_MIRROR || strchr(dir->path, '/') || !dir->owner.pid)
		return 0;
	/* pidgen_is_leader may say no for a leader too (ENOSYS under seccomp or
	 * valgrind): a leader's task/ linking to itself would loop. */
	tgid = pidgen_group(dir->owner.pid);
	return tgid == dir->owner.pid ? 0 : tgid;
}

/* A thread's net/ is its network namespace's view, the leader's while both
 * are in one namespace: then it is a link too ("../../net"). */
static int same_netns(pid_t p, pid_t t)
{
	char a[64], b[64], path[64];
	ssize_t la, lb;

	snprintf(path, sizeof(path), "%d/ns/net", p);
	la = readlinkat(pf.srcfd, path, a, sizeof(a));
	snprintf(path, sizeof(path), "%d/task/%d/ns/net", p, t);
	lb = readlinkat(pf.srcfd, path, b, sizeof(b));
	return la > 0 && la == lb && !memcmp(a, b, (size_t)la);
}

int dedup_child(const struct node *dir, const struct name_class *cls, pid_t *tgid)
{
	pid_t p, t;

	if (pf.no_dedup)
		return 0;
	if ((cls->flags & (NC_THREAD_FILES | NC_THREAD_NET)) && node_is_thread_dir(dir, &p, &t))
		return cls->flags & NC_THREAD_FILES ? files_alike(p, t) : same_netns(p, t);
	/* (a leader's task/ keeps its owner: the entries below are its own) */
	if ((cls->flags & NC_THREADS_LINK) && (t = group_of_thread(dir))) {
		*tgid = t;
		return 1;
	}
	return 0;
}

/* A thread's fd/ is "../../fd"; the task/ of a thread at the root is
 * "../TGID/task". */
static int link_text(const struct name_class *cls, const char *name, pid_t tgid, char *buf,
		     size_t len)
{
	int r = cls->flags & NC_THREADS_LINK ? snprintf(buf, len, "../%d/task", tgid)
					      : snprintf(buf, len, "../../%s", name);

	return r < 0 || (size_t)r >= len ? -ENAMETOOLONG : 0;
}

int dedup_link_text(const struct node *n, char *buf, size_t len)
{
	return link_text(n->cls, n->name, n->owner.tgid, buf, len);
}

/* A link's attributes from its directory's: owner and times stay. */
void dedup_link_attr(const struct name_class *cls, const char *name, pid_t tgid, struct stat *st)
{
	char text[64];

	st->st_mode = S_IFLNK | 0777;
	st->st_nlink = 1;
	st->st_size = link_text(cls, name, tgid, text, sizeof(text)) ? 0 : (off_t)strlen(text);
	st->st_blocks = 0;
}

void dedup_listing_init(const struct node *dir, struct dedup_listing *dl)
{
	pid_t p, t;

	int thread = !pf.no_dedup && node_is_thread_dir(dir, &p, &t);

	dl->dir = dir->cls;
	dl->files_link = thread && files_alike(p, t);
	dl->net_link = thread && same_netns(p, t);
	dl->task_link = !pf.no_dedup && group_of_thread(dir) != 0;
}

unsigned char dedup_dtype(const struct dedup_listing *dl, const char *name, unsigned char type)
{
	unsigned flags;

	if (!dl->files_link && !dl->net_link && !dl->task_link)
		return type;
	flags = name_classify(dl->dir, name)->flags;
	if ((dl->files_link && (flags & NC_THREAD_FILES)) || (dl->net_link && (flags & NC_THREAD_NET)) ||
	    (dl->task_link && (flags & NC_THREADS_LINK)))
		return DT_LNK;
	return type;
}
