/* The node table: one entry per inode the kernel currently holds.
 *
 * A node names a path in the source procfs (relative to its root) plus the
 * process it belongs to, identified by pid *and* generation so that a reused
 * pid never reaches an old node's data. Nodes are found by (parent, name)
 * in a lock-free hash table read under RCU, and live exactly as long as the
 * kernel's lookup count (FUSE forget) says, so memory is bounded by what the
 * kernel caches. The daemon keeps no file descriptor per node.
 */
#ifndef PROCFAST_NODE_H
#define PROCFAST_NODE_H

#include <stdatomic.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <urcu.h>          /* the default (membarrier) flavour, before rculfhash */
#include <urcu/rculfhash.h>

enum node_kind {
	NODE_ROOT,
	NODE_MIRROR,      /* a path of the source, served as it is */
	NODE_CALLER_LINK, /* "self" / "thread-self": text depends on the caller */
	NODE_LINK_TARGET, /* hidden "socket:[N]" etc.: stat through the link */
	NODE_DEDUP_LINK,  /* a thread's fd/, fdinfo/ or task/ served as a link */
};

struct name_class; /* what the name is (fs/entries/name_class.h), for the operations */

struct name_class;

struct node {
	struct cds_lfht_node by_name;
	struct cds_lfht_node by_id;
	struct rcu_head rcu;
	uint64_t serial;         /* never reused: keys children, FUSE generation */
	uint64_t parent_serial;
	enum node_kind kind;
	mode_t type;             /* S_IFMT the kernel was told; fixed for life */
	const struct name_class *cls; /* what the name is: decided at lookup (fs/entries/name_class.h) */
	/* Last attributes seen: procfs still answers fstat() on an open file
	 * whose entry or process is gone. */
	mode_t mode;
	uid_t uid;
	gid_t gid;
	unsigned nlink;
	uint64_t ino;
	struct node_owner {
		pid_t pid;       /* task this path belongs to (tgid, or tid in task/), 0 if none */
		pid_t tgid;      /* its thread group as named at the root */
		pid_t daemon_pid; /* pid, as the daemon's pid namespace names it (pidns= views) */
		uint64_t gen;    /* the task's generation (see pidgen.h) */
	} owner;
	_Atomic uint64_t nlookup;
	/* A regular file's size as the kernel holds it (fs/request/file_size.c): */
	_Atomic int opens;          /* open handles */
	atomic_bool size_taken;     /* it took a reply's size (0) */
	_Atomic int64_t hidden_size; /* where the next byte beyond is stored */
	/* -o snapshot (fs/request/snapshot.h): */
	atomic_bool snapshot_held;      /* a file: one of its opens is a snapshot */
	atomic_bool snapshot_contended; /* a directory: a child's open met another's snapshot */
	_Atomic int unnamed;            /* node_unname: 1 once its name was taken off, 2 once forgotten */
	atomic_bool name_dropped; /* a process dir whose name the kernel was told to drop */
	char *name;              /* name in parent (the link text for targets) */
	char path[];             /* source path, relative; "." for the root */
};

struct node_key {
	uint64_t parent_serial;
	const char *name;
};

/* root_cls: the class of the root directory. */
int node_table_init(const struct name_class *root_cls);
void node_table_destroy(void);

struct node *node_root(void);

/* What makes two nodes of one name the same entry. */
struct node_identity {
	enum node_kind kind;
	mode_t type;      /* S_IFMT bits are compared */
	uint64_t gen;     /* the owning task's generation */
};

/* Finds a live child with that identity (any, if want is NULL) and takes
 * one lookup reference on it; NULL if none. */
struct node *node_find_get(const struct node *parent, const char *name,
			   const struct node_identity *want);

/* The child with that identity, referenced once more, or a new one with one
 * reference; fixed_id: its id if it is to be one of the fixed ones (below),
 * else 0. */
struct node *node_get_or_insert(const struct node *parent, const char *name, const char *path,
				const struct stat *st, const struct node_identity *id,
				const struct node_owner *owner, const struct name_class *cls,
				uint64_t fixed_id);

/* A node an earlier server gave out, with the id and lookup count the
 * kernel holds it by (cache/nodes/node_record.c); NULL when memory is short. Ids
 * given out after it are above serial. */
struct node *node_insert_as(const struct node *parent, const char *name, const char *path,
			    const struct stat *st, const struct node_identity *id,
			    const struct node_owner *owner, const struct name_class *cls,
			    uint64_t serial, uint64_t nlookup);

/* Calls fn for every node but the root and the fixed ones, in an RCU
 * read-side section: with no request running, what the kernel holds. */
void node_for_each(void (*fn)(const struct node *n, void *arg), void *arg);

/* Records st as the node's last known attributes. */
void node_remember(struct node *n, const struct stat *st);
/* The attributes last remembered (mode, uid, gid, ino) into st. */
void node_recall(const struct node *n, struct stat *st);

/* Takes n's name off the table: the next lookup of the name makes a new
 * node, with an id of its own, while n lives on by its id until the kernel
 * forgets it (a file open on it). Not the root nor a fixed node. */
void node_unname(struct node *n);

/* Drops n lookup references; frees the node (after a grace period) at zero. */
void node_forget(struct node *n, uint64_t count);

/* FUSE's node ids: 1 is the root, the others are serials. Serials start at
 * the boot-time clock in nanoseconds when the table is made, so the ids of a
 * daemon restarted on the same connection never meet those the kernel still
 * holds from its predecessor: those are unknown here (node_from_ino gives
 * NULL) and answered with ESTALE (fs/request/request.h). */
#define NODE_ROOT_ID 1

/* Ids from 2 to NODE_FIXED_MAX are fixed: they name the same entry in every
 * server (the root's names beside the pids: fs/request/root_dir.c), so that what
 * the kernel holds of them, mounts on them included (a container's masks
 * over /proc/sys), survives a restart. Their nodes live as long as the
 * table. A fixed id the table does not hold (the kernel had it from an
 * earlier server) is made by resolve_fixed. */
#define NODE_FIXED_MAX 4096
void node_set_fixed_resolver(struct node *(*resolve_fixed)(uint64_t id));

struct node *node_from_ino(uint64_t ino);

/* The directory at the root (PID) that n is in or is; NULL for the root and
 * names beside the PIDs. */
struct node *node_process_dir(struct node *n);

static inline uint64_t node_ino(const struct node *n)
{
	return n->serial;
}

/* Registers the calling thread with RCU once (libfuse makes and ends worker
 * threads on its own); unregistered when the thread exits. */
void rcu_thread_register_once(void);

/* Returns freed memory to the system after many nodes went; called
 * periodically from one thread. */
void node_table_trim(void);

/* Number of live nodes, for status and leak checks. */
long node_count(void);

/* The pids that name children of parent (the processes the kernel may hold
 * anything of, for the root), in *pids to free; how many. */
size_t node_child_pids(const struct node *parent, pid_t **pids);

#endif
