/* fs/entries/cache_life.c: how long the kernel may keep a name and its
 * attributes. No mount: the process index is marked by hand (as the event
 * listener marks it) and the process states are this test's own: itself (a
 * live listed leader), one of its threads, a child that runs (never
 * listed) and a child kept a zombie. */
#include <assert.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cache/index/pidgen.h"
#include "cache/index/tgid_index.h"
#include "cache/nodes/node.h"
#include "fs/entries/cache_life.h"
#include "fs/entries/name_class.h"
#include "fs/lib/settings.h"

#define FOR_GOOD 86400.0 /* "until an event drops it" (cache_life.c) */
#define ENTRY 1.5        /* -o entry_timeout, attr_timeout */
#define ATTR 2.5

static struct node *root;

/* The node of name in parent, classified as lookups classify it; pid: the
 * task it names (NC_TASK), with tgid its group. */
static struct node *add(struct node *parent, const char *name, mode_t type, pid_t pid, pid_t tgid)
{
	struct stat st = { .st_mode = type | 0555 };
	struct node_owner owner = parent->owner;
	char path[256];
	struct node *n;

	if (pid)
		owner = (struct node_owner){ .pid = pid, .tgid = tgid, .daemon_pid = pid };
	snprintf(path, sizeof(path), "%s/%s", parent->path, name);
	n = node_get_or_insert(parent, name, parent == root ? name : path, &st,
			       &(struct node_identity){ NODE_MIRROR, type, 0 }, &owner,
			       name_classify(parent->cls, name), 0);
	assert(n);
	return n;
}

static enum name_life life_in(const struct node *parent, const char *name)
{
	return cache_life_of(parent, name_classify(parent->cls, name), name);
}

static struct node *process(pid_t pid)
{
	char name[16];

	snprintf(name, sizeof(name), "%d", pid);
	return add(root, name, S_IFDIR, pid, pid);
}

/* Names beside the pids: the mount's timeouts, whatever the processes. */
static void fixed_names(void)
{
	assert(life_in(root, "meminfo") == LIFE_FIXED && life_in(root, "self") == LIFE_FIXED);
	assert(cache_life_entry_timeout(root, LIFE_FIXED) == ENTRY);
	assert(cache_life_attr_timeout(add(root, "meminfo", S_IFREG, 0, 0)) == ATTR);
	assert(cache_life_attr_timeout(add(root, "sys", S_IFDIR, 0, 0)) == ATTR);
}

/* A live listed leader: its name, its fixed names and their attributes
 * until its exit event; what changes without an event is asked again. */
static void live_leader(pid_t me, pid_t tid)
{
	char name[16];
	struct node *p = process(me), *fd, *ns, *task;

	snprintf(name, sizeof(name), "%d", me);
	assert(life_in(root, name) == LIFE_PROCESS);
	assert(cache_life_entry_timeout(root, LIFE_PROCESS) == FOR_GOOD);
	assert(cache_life_attr_timeout(p) == FOR_GOOD);
	assert(life_in(p, "status") == LIFE_TASK && cache_life_entry_timeout(p, LIFE_TASK) == FOR_GOOD);
	assert(cache_life_attr_timeout(add(p, "status", S_IFREG, 0, 0)) == FOR_GOOD);
	assert(cache_life_attr_timeout(add(p, "exe", S_IFLNK, 0, 0)) == FOR_GOOD);
	fd = add(p, "fd", S_IFDIR, 0, 0);
	ns = add(p, "ns", S_IFDIR, 0, 0);
	task = add(p, "task", S_IFDIR, 0, 0);
	assert(cache_life_attr_timeout(fd) == ATTR);   /* st_size counts its open files */
	assert(cache_life_attr_timeout(ns) == FOR_GOOD); /* counts nothing */
	assert(cache_life_attr_timeout(task) == ATTR); /* st_nlink counts its threads */
	/* fd/N: the name while there, its attributes asked each time; fdinfo/N nothing */
	assert(life_in(fd, "3") == LIFE_NAME && cache_life_entry_timeout(fd, LIFE_NAME) == ENTRY);
	assert(cache_life_attr_timeout(add(fd, "3", S_IFLNK, 0, 0)) == 0);
	assert(life_in(add(p, "fdinfo", S_IFDIR, 0, 0), "3") == LIFE_NONE);
	assert(cache_life_entry_timeout(fd, LIFE_NONE) == 0);
	/* a thread: its name asked at every walk (reaped before its exit event),
	 * its attributes kept while it runs, in task/ as at the root */
	snprintf(name, sizeof(name), "%d", tid);
	assert(life_in(task, name) == LIFE_THREAD && cache_life_entry_timeout(task, LIFE_THREAD) == 0);
	assert(cache_life_attr_timeout(add(task, name, S_IFDIR, tid, me)) == FOR_GOOD);
	assert(life_in(root, name) == LIFE_NONE); /* a thread id is never a listed leader */
	assert(cache_life_attr_timeout(add(root, name, S_IFDIR, tid, me)) == FOR_GOOD);
}

/* Link targets: one object's name is its own for good, inside a live
 * process; "anon_inode:[...]" names many: nothing. */
static void link_targets(pid_t me, pid_t unlisted)
{
	struct node *fd = add(process(me), "fd", S_IFDIR, 0, 0), *ns = add(process(me), "ns", S_IFDIR, 0, 0);
	struct node *other_ns = add(process(unlisted), "ns", S_IFDIR, 0, 0);

	assert(life_in(fd, "socket:[159173]") == LIFE_OBJECT);
	assert(life_in(fd, "anon_inode:[eventfd]") == LIFE_NONE);
	assert(life_in(other_ns, "net:[4026531840]") == LIFE_OBJECT); /* not narrowed */
	assert(life_in(root, "socket:[1]") == LIFE_OBJECT && life_in(root, "pipe:[x]") == LIFE_NONE);
	assert(cache_life_entry_timeout(fd, LIFE_OBJECT) == FOR_GOOD);
	assert(cache_life_entry_timeout(other_ns, LIFE_OBJECT) == ENTRY);
	assert(cache_life_entry_timeout(root, LIFE_OBJECT) == ENTRY);
	/* a namespace's attributes are fixed while named; a socket's are not */
	assert(cache_life_attr_timeout(add(ns, "net:[4026531840]", S_IFREG, 0, 0)) == FOR_GOOD);
	assert(cache_life_attr_timeout(add(other_ns, "net:[4026531840]", S_IFREG, 0, 0)) == ATTR);
	assert(cache_life_attr_timeout(add(fd, "socket:[159173]", S_IFSOCK, 0, 0)) == ATTR);
	assert(cache_life_attr_timeout(add(fd, "anon_inode:[eventfd]", S_IFREG, 0, 0)) == 0);
}

/* Nothing of a process is cached unless it is a listed leader that runs:
 * no event would come to drop it. */
static void nothing_cached_in(pid_t pid)
{
	char name[16];
	struct node *p = process(pid);

	snprintf(name, sizeof(name), "%d", pid);
	assert(life_in(root, name) == LIFE_NONE);
	assert(life_in(p, "status") == LIFE_NONE && life_in(p, "fd") == LIFE_NONE);
	assert(cache_life_attr_timeout(p) == 0);
	assert(cache_life_attr_timeout(add(p, "status", S_IFREG, 0, 0)) == 0);
	assert(cache_life_attr_timeout(add(p, "ns", S_IFDIR, 0, 0)) == 0);
	assert(life_in(root, "meminfo") == LIFE_FIXED); /* beside the pids: unchanged */
}

static int told[2], release[2];

static void *thread_main(void *arg)
{
	pid_t tid = gettid();
	char c;

	(void)arg;
	assert(write(told[1], &tid, sizeof(tid)) == sizeof(tid));
	assert(read(release[0], &c, 1) == 1); /* until the test ends */
	return NULL;
}

int main(void)
{
	int proc = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
	pid_t me = getpid(), tid, zombie, unlisted;
	pthread_t thread;
	siginfo_t info;

	assert(proc >= 0 && pipe(told) == 0 && pipe(release) == 0);
	pf.entry_timeout = ENTRY;
	pf.attr_timeout = ATTR;
	pidgen_init(proc, 1);
	tgid_index_init(proc);
	assert(node_table_init(name_class_root()) == 0 && (root = node_root()));
	assert(pthread_create(&thread, NULL, thread_main, NULL) == 0);
	assert(read(told[0], &tid, sizeof(tid)) == sizeof(tid) && tid != me);
	if ((unlisted = fork()) == 0) { /* runs until the test ends, or fails */
		close(release[1]);
		_exit(read(release[0], &info, 1) != 1);
	}
	assert(unlisted > 0);
	if ((zombie = fork()) == 0)
		_exit(0);
	/* exited, not reaped: a zombie until waitpid below */
	assert(zombie > 0 && waitid(P_PID, (id_t)zombie, &info, WEXITED | WNOWAIT) == 0);

	tgid_index_mark(me);
	tgid_index_mark(zombie);
	fixed_names();
	live_leader(me, tid);
	link_targets(me, unlisted);
	nothing_cached_in(unlisted); /* runs, never listed */
	assert(tgid_index_live_leader(zombie));
	nothing_cached_in(zombie); /* listed, exited */
	tgid_index_exited(me);     /* its exit event came */
	nothing_cached_in(me);
	tgid_index_mark(me);       /* an exec: listed again */
	assert(life_in(root, "meminfo") == LIFE_FIXED && life_in(process(me), "status") == LIFE_TASK);
	pf.hide_level = 2;         /* hidepid: what one caller sees another may not */
	nothing_cached_in(me);
	assert(cache_life_entry_timeout(add(process(me), "fd", S_IFDIR, 0, 0), LIFE_OBJECT) == ENTRY);
	pf.hide_level = 0;

	assert(write(release[1], "xy", 2) == 2 && pthread_join(thread, NULL) == 0);
	assert(waitpid(zombie, NULL, 0) == zombie && waitpid(unlisted, NULL, 0) == unlisted);
	node_table_destroy();
	return 0;
}
