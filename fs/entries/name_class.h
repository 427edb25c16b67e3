/* What a name in the tree is, decided once when it is looked up, from its
 * parent's class and its text, by tables in the manner of fs/proc/base.c's
 * pid_entry tables. Every operation on the node reads the decision:
 *  - children: the table that classifies the names inside it (directories);
 *  - life: what the kernel may cache about the name and its attributes;
 *  - reader_ns: the namespaces of the *reader* that procfs evaluates the
 *    entry in (its content, and for NC_NAMES_VARY its names and attributes);
 *  - flags: the rest (a pid or tid, the caller links, dedup candidates,
 *    listings from templates, the reader's own state).
 */
#ifndef PROCFAST_NAME_CLASS_H
#define PROCFAST_NAME_CLASS_H

#include "fs/caller/reader_ns.h"

/* What the kernel may cache about a name (the process's own state may forbid
 * more, fs/request/entry.c). */
enum name_life {
	LIFE_FIXED,        /* the name, present or absent, and its attributes */
	LIFE_PROCESS,      /* a pid at the root: the name while its leader lives */
	LIFE_TASK,         /* a fixed name in a task's directory: the name, present or
			    * absent, while the task lives, and a non-directory's
			    * attributes (its owner follows uid/gid events) */
	LIFE_THREAD,       /* a thread id in task/ (as a non-leader's directory at the
			    * root): the name asked at every walk, as a thread is reaped
			    * before its exit event can be applied, but the attributes
			    * kept while it lives (its exit and uid/gid events drop
			    * them) */
	LIFE_NAME,         /* the name while present; attributes asked every time */
	LIFE_OBJECT,       /* a link target naming one object ("socket:[N]") */
	LIFE_NONE,         /* nothing: asked every time */
};

#define NC_TASK          0x01 /* a pid (at the root) or tid (in task/): owns that task */
#define NC_CALLER_LINK   0x02 /* self, thread-self: the text names the caller */
#define NC_LINK_TARGET   0x04 /* "socket:[N]"...: the target of a link with that text */
#define NC_THREAD_FILES  0x08 /* a thread's fd/, fdinfo/: a link while it shares the leader's */
#define NC_THREAD_NET    0x10 /* a thread's net/: a link while in the leader's netns */
#define NC_THREADS_LINK  0x20 /* task/ of a thread id at the root: a link to the leader's */
#define NC_TEMPLATE      0x40 /* a thread directory listed from a template */
#define NC_NAMES_VARY    0x80 /* names and attributes below depend on reader_ns: uncached */
#define NC_LIST_PLUS    0x100 /* listed with each entry's lookup (READDIRPLUS): fd/, whose
			       * names lsof and ls -l look up next */
#define NC_FILE_TABLE   0x200 /* fd/, fdinfo/: they list open files, and fail once the process is gone */
#define NC_STABLE_ATTRS  0x400 /* attributes that never change while named: a link target's,
				* or a task's directory that counts nothing (ns/, attr/) */
#define NC_NO_SNAPSHOT   0x800 /* read at its offsets or as a stream (mem, kmsg, kcore):
				* never made whole at open (-o snapshot, fs/request/snapshot.c) */
#define NC_READ_UNCHECKED 0x1000 /* procfs's read asks nothing of its reader (its open
				  * decided): a read of the source file the caller opened
				  * is the same whoever makes it (fs/request/file.c) */
#define NC_READ_WAITS   0x2000 /* a read waits for the kernel's events (kmsg): the
				* source is open O_NONBLOCK, and the caller's interrupt
				* ends the wait (fs/request/read_wait.h) */
#define NC_WALK_ASKS_TASK 0x4000 /* procfs's walk through it asks whether its task lives
				  * (proc_pid_permission: a pid's directory at the root,
				  * task/; proc_fdinfo_permission: fdinfo/): a name in it
				  * fails with ESRCH once the task is gone, in the task's
				  * other directories (a tid's in task/ too) with ENOENT */

/* A task's files that show its state: read by the task itself through the
 * mount, they would show it waiting for the daemon (fs/entries/self_state.c):
 * self_state_content's content_arg. */
enum self_state {
	SELF_NONE,
	SELF_STAT,   /* stat: state (field 3), wchan (field 35) */
	SELF_STATUS, /* status: State: */
	SELF_WCHAN,  /* wchan */
};

struct name_table;
struct content_ops;

struct name_class {
	const struct name_table *children;
	unsigned char life;        /* enum name_life */
	unsigned char reader_ns;   /* RNS() bits */
	unsigned short flags;      /* NC_* */
	const struct content_ops *content; /* what a read gives (content.h); NULL: the source's bytes */
	unsigned char content_arg; /* which of its files (enum res_file, enum self_state) */
};

/* The class of the root directory. */
const struct name_class *name_class_root(void);

/* The class of name inside a directory of class dir. */
const struct name_class *name_classify(const struct name_class *dir, const char *name);

/* 0 when every table is in the order lookups rely on (tests/unit/test_name_class.c). */
int name_class_check_tables(void);

/* The kinds an operation on a node of class cls depends on: its content's
 * for open, read and write (content), else only where its names and
 * attributes vary by namespace. */
static inline unsigned reader_ns_kinds(const struct name_class *cls, int content)
{
	return content || (cls->flags & NC_NAMES_VARY) ? cls->reader_ns : 0;
}

#endif
