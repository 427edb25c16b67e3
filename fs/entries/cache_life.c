/* What the kernel may cache about a name and its attributes (cache_life.h). */
#include "fs/entries/cache_life.h"

#include "cache/index/pid_view.h"
#include "cache/index/pidgen.h"
#include "cache/index/tgid_index.h"
#include "fs/lib/proc_names.h"
#include "fs/lib/settings.h"

/* What the kernel may cache about a process's entries: only while it is a
 * listed leader that has not exited, since the exit event drops the cache
 * (invalidate.c) and nothing announces its reaping. The pidfd check closes
 * the window before the exit event is handled. */
static int process_cacheable(pid_t tgid)
{
	/* With hidepid, what one caller may see another may not, and the
	 * kernel's caches are shared by all callers. */
	return !pf.hide_level && tgid_index_live_leader(tgid) && !pidgen_exited(tgid);
}

/* What the kernel may cache about a name of class cls in parent: the
 * class's life, narrowed by the state of the process it belongs to. Nothing
 * is cached inside a process that exited (a zombie, or a leader whose
 * threads live on): no event will come for its reaping. A cached name of a
 * process that exited still fails at once: every operation checks the
 * process generation. */
enum name_life cache_life_of(const struct node *parent, const struct name_class *cls,
			      const char *name)
{
	if (cls->life == LIFE_OBJECT || cls->life == LIFE_NONE)
		return cls->life;
	if (cls->life == LIFE_PROCESS) /* its exit event drops it (invalidate.c) */
		return process_cacheable(name_pid(name)) ? LIFE_PROCESS : LIFE_NONE;
	if (parent->owner.tgid && !process_cacheable(parent->owner.tgid))
		return LIFE_NONE;
	return cls->life;
}

/* The same for a node's attributes, asked again at each getattr. */
/* "Until an event says otherwise": see cache_life_entry_timeout. */
#define PROCESS_LIFETIME_S 86400.0

/* In a task's directory, the directories count what changes without an
 * event (fd/ its open files in st_size, task/ its threads and net/ its
 * namespace's entries in st_nlink), and the links that stand for shared
 * ones (a thread's fd/, fdinfo/, net/, a thread id's task/) are asked again
 * soon (dedup): their attributes keep attr_timeout. */
#define NC_DEDUP_LINKS (NC_THREADS_LINK | NC_THREAD_FILES | NC_THREAD_NET)

/* A pid at the root that is a thread's: its group is another's. */
static int is_root_thread(const struct node *n)
{
	return n->cls->life == LIFE_PROCESS && n->owner.tgid != n->owner.pid;
}

/* A thread's directory keeps its attributes while the thread has not begun
 * to exit: its exit event, sent after that, drops them (invalidate.c). In a
 * pid view the events' thread ids cannot be told in the view's terms. */
static int thread_cacheable(pid_t tid)
{
	return !pid_view_active() && !pidgen_exiting(tid);
}

double cache_life_attr_timeout(const struct node *n)
{
	enum name_life life = is_root_thread(n) ? LIFE_THREAD : n->cls->life;

	if (life == LIFE_NONE || life == LIFE_NAME ||
	    (life != LIFE_OBJECT && n->owner.tgid && !process_cacheable(n->owner.tgid)))
		return 0;
	/* A live leader's directory, and the files and links in its tasks'
	 * directories, change owner with its uid or gid, which an event says
	 * (invalidate.c drops its name, and every name and attribute below). */
	if (life == LIFE_PROCESS ||
	    (life == LIFE_TASK && (n->type != S_IFDIR || (n->cls->flags & NC_STABLE_ATTRS)) &&
	     !(n->cls->flags & NC_DEDUP_LINKS)))
		return PROCESS_LIFETIME_S;
	if (life == LIFE_THREAD)
		return thread_cacheable(n->owner.pid) ? PROCESS_LIFETIME_S : 0;
	/* a namespace named in a live process: as long as its name (cache_life_entry_timeout) */
	if (life == LIFE_OBJECT && (n->cls->flags & NC_STABLE_ATTRS) && n->owner.tgid &&
	    process_cacheable(n->owner.tgid))
		return PROCESS_LIFETIME_S;
	return pf.attr_timeout;
}

/* "Until the exit event drops it": a live leader's name and the fixed names
 * in its tasks' directories (the kernel keeps them while memory allows;
 * invalidate.c drops the leader's name at the exit, the names below with it
 * and those held open; a thread's directory is asked again at every walk).
 * A cached name of a process that exited still fails at once: every
 * operation checks the process generation. */
double cache_life_entry_timeout(const struct node *parent, enum name_life life)
{
	/* A thread is reaped as it exits, before its exit event can be applied:
	 * its name kept until then would answer stat() for a thread gone from
	 * procfs. (A leader is a zombie until waited for, which covers that.) */
	if (life == LIFE_NONE || life == LIFE_THREAD)
		return 0;
	/* life_in gave these only inside a live leader whose exit an event will say */
	if (life == LIFE_PROCESS || life == LIFE_TASK)
		return PROCESS_LIFETIME_S;
	/* A link target naming one object ("net:[N]" in ns/) names it for good:
	 * whatever link points to it, the name is the object's. */
	if (life == LIFE_OBJECT && parent->owner.tgid && process_cacheable(parent->owner.tgid))
		return PROCESS_LIFETIME_S;
	return pf.entry_timeout;
}
