/* The process-event listener: keeps the TGID index current from the
 * kernel's proc connector (netlink, CN_IDX_PROC).
 *
 * FORK of a new leader marks it; EXIT of a leader makes it "exited" (the
 * index then lists it only while the source has it); EXEC revives the group
 * under its tgid (a non-leader's exec ends with the old leader's EXIT and
 * then EXEC with pid == tgid). Lost events (ENOBUFS) trigger one scan of the
 * source root while readers keep being served. Threads' exits and id
 * changes, which only drop cached names, come on a second socket where its
 * filter can be attached (proc_filter.h): a root listing applies what is
 * queued before it, and a program starting and ending thousands of threads a
 * second no longer puts their events in its way. Only a listener in the
 * initial user and pid namespaces with CAP_NET_ADMIN receives events; where
 * that fails the index falls back to a short-lived cached scan.
 */
#ifndef PROCFAST_PROC_EVENTS_H
#define PROCFAST_PROC_EVENTS_H

#include <sys/types.h>

/* What the FUSE face does with events it cares about (kernel caches). */
struct proc_event_hooks {
	/* Whether the kernel may hold anything of this process to drop: the
	 * two below are called (from a thread of their own) only then. */
	int (*named)(pid_t pid);
	void (*leader_exited)(pid_t tgid);
	/* A thread that is not its group's leader ended or changed its own ids
	 * (never in a pid view, whose thread ids the events cannot give). */
	void (*thread_changed)(pid_t tid, pid_t tgid);
	void (*creds_changed)(pid_t pid);
	/* After the rescan that a loss of events (ENOBUFS) caused: a uid or
	 * gid change among them went unseen. */
	void (*events_lost)(void);
	/* What the kernel caches is not known to this server: it took over a
	 * connection from one that left no node table (it was killed), whose
	 * names the kernel may keep until events this server never saw. */
	void (*caches_unknown)(void);
};

struct proc_events_config {
	int rcvbuf;           /* socket receive buffer in bytes, 0 = default */
	int disabled;         /* -o events=off: force the fallback */
	unsigned fallback_ms; /* lifetime of the fallback scan */
};

/* Subscribes (in the caller's thread, so the mode is known at once) and
 * seeds the index. Returns the mode's name: "events", "events (unfiltered)"
 * or "scan". */
const char *proc_events_start(const struct proc_events_config *cfg,
			      const struct proc_event_hooks *hooks);

/* Starts the listener thread (after daemonizing). */
int proc_events_run(void);
/* Before a server stops serving: the notifier's writes to the kernel may
 * wait for a lookup that only a serving server answers, so it ends first,
 * and the notices after are dropped (the next server's node ids make every
 * kernel entry of this one stale anyway). */
void proc_events_stop_notices(void);
void proc_events_stop(void);

/* Has the notifier thread call hooks->caches_unknown (proc_event_hooks),
 * which may wait for the kernel: a server's own thread must not, before it
 * serves. Nothing without a listener (a scan caches nothing long). */
void proc_events_caches_unknown(void);

/* Drops the exited processes the index still holds and the source no longer
 * has (a timer, fs/daemon/timers.c), while the listener runs. */
void proc_events_sweep(void);

/* Applies the events queued before a listing began, in the lister's own
 * thread, so that every process that exists for the caller is in the index
 * and an exit queued is known. Cheap (one poll) when nothing is queued; a
 * rescan after lost events is the listener's, waited for; never waits more
 * than a few tens of ms (a stuck listener). */
void proc_events_sync(void);

#endif
