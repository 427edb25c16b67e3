/* Keeps the kernel's caches honest when processes change: the name of a
 * leader that exited is dropped (it and the fixed names below are cached
 * only while its leader lives), with the names held open below it; a
 * process whose uid or gid changed has its name dropped, and every name and
 * attribute below; after a loss of events, every process's. Called from the
 * event notifier thread, and from a request that found a process gone
 * before its exit event (entry.c). */
#include "fs/request/invalidate.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/index/proc_events.h"
#include "cache/index/tgid_index.h"
#include "fs/request/handle.h"

static struct fuse_session *session;

/* A pid's name in a directory (the root, task/) */
struct pid_name {
	char text[16];
};

static struct pid_name pid_name(pid_t pid)
{
	struct pid_name n;

	snprintf(n.text, sizeof(n.text), "%d", (int)pid);
	return n;
}

/* The kernel has an inode for this pid only if we hold a node for it. */
static struct node *known_pid_node(struct pid_name name)
{
	return node_find_get(node_root(), name.text, NULL);
}

/* A name the kernel looks up after the exit event was applied is not
 * cached (fs/request/entry.c, process_cacheable), so only one looked up before can
 * need dropping, and that one has a node. */
static int pid_named(pid_t pid)
{
	struct node *n = known_pid_node(pid_name(pid));

	if (n)
		node_forget(n, 1);
	return n != NULL;
}

static int (*wait_begin)(void);
static void (*wait_end)(void);

void invalidate_set_wait_guard(int (*begin)(void), void (*end)(void))
{
	wait_begin = begin;
	wait_end = end;
}

/* Waits for the kernel's lock on the root, which a lookup there holds until
 * it is answered. */
static void drop_root_name(const char *name)
{
	fuse_lowlevel_notify_inval_entry(session, FUSE_ROOT_ID, name, strlen(name));
}

/* What the exit event does, from the notifier: it may wait. */
static void drop_process_name(struct node *n)
{
	atomic_store(&n->name_dropped, true);
	drop_root_name(n->name);
}

/* The lookup that holds the root's lock may be waiting for a thread to serve
 * it: the transport says whether this one may wait (its ring queue keeps
 * another free). If not, the process's exit event, sent already, drops the
 * name: until then a walk through it answers ESRCH. */
int invalidate_found_gone(struct node *n)
{
	if (atomic_exchange(&n->name_dropped, true))
		return -EALREADY;
	if (!wait_begin || wait_begin()) {
		drop_root_name(n->name);
		if (wait_end)
			wait_end();
	}
	return 0;
}

int invalidate_store_byte(const struct node *n, off_t at)
{
	char byte = 0;
	struct fuse_bufvec one = FUSE_BUFVEC_INIT(1);

	one.buf[0].mem = &byte;
	return fuse_lowlevel_notify_store(session, node_ino(n), at, &one, 0);
}

/* The names held open in its directories (an open file, a directory fd)
 * outlive the drop of its name, and the kernel may keep them until an event
 * says otherwise: each is dropped too, so that a walk from a held directory
 * asks again (and gets procfs's answer once the process is reaped). */
static void drop_held_name(const struct node *n, void *tgid)
{
	if (n->owner.tgid && (!tgid || n->owner.tgid == *(pid_t *)tgid) &&
	    n->parent_serial != NODE_ROOT_ID)
		fuse_lowlevel_notify_inval_entry(session, n->parent_serial, n->name, strlen(n->name));
}

static void drop_held_names(pid_t tgid)
{
	rcu_thread_register_once();
	handle_for_each_node(drop_held_name, tgid ? &tgid : NULL);
}

static void on_leader_exited(pid_t tgid)
{
	struct node *n = known_pid_node(pid_name(tgid));

	if (!n)
		return;
	drop_process_name(n);
	drop_held_names(tgid);
	node_forget(n, 1);
}

/* Its entries' owner follows its uid and gid: the kernel drops the process's
 * name, and every name and attribute below it, to ask again, then the
 * directory's attributes (held open, it outlives its name). In that order,
 * whoever sees the directory's new owner finds nothing old below it. (Not a
 * drop for its exit: name_dropped stays as it is.) */
static void on_creds_changed(pid_t pid)
{
	struct pid_name name = pid_name(pid);
	struct node *n = known_pid_node(name);

	if (!n)
		return;
	fuse_lowlevel_notify_inval_entry(session, FUSE_ROOT_ID, name.text, strlen(name.text));
	fuse_lowlevel_notify_inval_inode(session, node_ino(n), -1, 0);
	node_forget(n, 1);
}

/* A thread's directories keep their attributes while it lives (entry.c):
 * its own at the root and its group's task/TID drop them at its exit or a
 * change of its own ids (their names are asked at every walk). */
static void on_thread_changed(pid_t tid, pid_t tgid)
{
	struct node *leader = known_pid_node(pid_name(tgid));
	struct node *tasks = leader ? node_find_get(leader, "task", NULL) : NULL;
	struct node *t;

	on_creds_changed(tid);
	if (tasks) {
		if ((t = node_find_get(tasks, pid_name(tid).text, NULL))) {
			fuse_lowlevel_notify_inval_inode(session, node_ino(t), -1, 0);
			node_forget(t, 1);
		}
		node_forget(tasks, 1);
	}
	if (leader)
		node_forget(leader, 1);
}

/* Among lost events a uid or gid change may have gone unseen: every process
 * the kernel holds anything of is asked about again, as after a change of
 * its credentials. (Lost exits are the rescan's: the index drops them.) */
static void on_events_lost(void)
{
	pid_t *pids;
	size_t n = node_child_pids(node_root(), &pids);

	for (size_t i = 0; i < n; i++)
		on_creds_changed(pids[i]);
	free(pids);
	drop_held_names(0); /* lost exits among them */
}

/* Taken over from a server that was killed: the kernel may keep names and
 * attributes it cached until an event that server got and this one never
 * will (a process's new owner). The names of the processes that live are
 * dropped. Not every name (FUSE_NOTIFY_INC_EPOCH, 6.16+): the kernel would
 * detach the mounts on the fixed ones, a container runtime's masks over
 * sys/ and keys. A gone process's cached name still answers stat until it
 * is asked about (README "What differs"). */
static void on_caches_unknown(void)
{
	for (int64_t pid = tgid_index_next(1); pid > 0; pid = tgid_index_next((uint32_t)pid + 1))
		drop_root_name(pid_name((pid_t)pid).text);
}

void invalidate_init(struct fuse_session *se, struct proc_event_hooks *hooks)
{
	session = se;
	hooks->named = pid_named;
	hooks->leader_exited = on_leader_exited;
	hooks->thread_changed = on_thread_changed;
	hooks->creds_changed = on_creds_changed;
	hooks->events_lost = on_events_lost;
	hooks->caches_unknown = on_caches_unknown;
}
