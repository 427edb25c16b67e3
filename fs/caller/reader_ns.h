/* Acting in the reader's namespaces.
 *
 * procfs evaluates some entries in the namespaces of the task that reads
 * them (fs/entries/name_class.c says which). A worker thread makes such a source
 * operation in the caller's namespaces: it enters the caller's network, uts,
 * ipc and cgroup namespaces with setns() and leaves them after, and takes
 * the caller's root directory with chroot() where procfs prints paths
 * relative to the reader's root (link texts, maps). The caller's namespaces
 * are those its /proc/TID/ns/ names at the request, its root its
 * /proc/TID/root; their files are kept open by identity for a few seconds
 * of disuse, so a request pays one statx per kind to learn the caller's,
 * and two setns() (or fchdir+chroot) where it differs from the daemon's.
 *
 * A thread of a multithreaded process cannot enter a user or time namespace
 * (setns: EINVAL/EUSERS) nor change its active pid namespace: for those the
 * caller is reported "foreign" and the operation goes to a process in the
 * caller's namespaces (fs/caller/ns_helper.h), or fails (EPERM).
 */
#ifndef PROCFAST_READER_NS_H
#define PROCFAST_READER_NS_H

/* Namespaces a reader's view depends on. */
enum reader_ns_kind {
	RNS_NET,
	RNS_UTS,
	RNS_IPC,
	RNS_CGROUP,
	RNS_ROOT,  /* not a namespace: the reader's root directory (d_path) */
	RNS_USER,
	RNS_TIME,
	RNS_PID,
	RNS_KINDS
};
#define RNS(kind) (1u << (kind))

/* Namespaces one worker thread can enter. */
#define RNS_ENTERABLE (RNS(RNS_NET) | RNS(RNS_UTS) | RNS(RNS_IPC) | RNS(RNS_CGROUP) | RNS(RNS_ROOT))
/* Of those, the ones procfs asks at each read and write, not only at lookup and
 * open (a sysctl file opened in a network or ipc namespace stays that
 * namespace's; a uts name, a cgroup path and d_path are the reader's now). */
#define RNS_AT_EACH_READ (RNS(RNS_UTS) | RNS(RNS_CGROUP) | RNS(RNS_ROOT))

struct reader_ns {
	unsigned entered; /* kinds this thread switched to the caller's */
	unsigned foreign; /* kinds asked that are not the daemon's and were not entered */
};

/* Records the daemon's own namespaces (selfproc: its /proc). 0 or -errno. */
int reader_ns_init(int selfproc);

/* The one table of the kinds: a kind's file below /proc/TID/ ("ns/net",
 * "root"), and its setns() type (CLONE_NEW*; 0 for the root directory). */
const char *reader_ns_file(enum reader_ns_kind kind);
int reader_ns_type(enum reader_ns_kind kind);


/* Enters thread tid's namespaces of the enterable kinds asked (RNS bits)
 * where they are not the daemon's, and reports the others that are not.
 * 0, or -EPERM when the caller's namespaces cannot be told or entered
 * (nothing is left entered then). */
int reader_ns_enter(int tid, unsigned kinds, struct reader_ns *rn);

/* A request begins (1) or ends (0) on this thread: within it, a caller's
 * namespaces are asked once (the root at every ask). */
void reader_ns_request(int begins);

/* Back to the daemon's namespaces. */
void reader_ns_leave(struct reader_ns *rn);

/* The inode of thread tid's namespace of that kind, or 0 (gone, or the
 * kernel has none of that kind). */
unsigned long reader_ns_of(int tid, enum reader_ns_kind kind);

/* Whether the daemon's namespace of that kind has that inode. */
int reader_ns_is_daemons(enum reader_ns_kind kind, unsigned long ino);

/* Closes namespace files unused for a while (from a periodic thread). */
void reader_ns_trim(void);

#endif
