/* What the kernel keeps for each of the listener's sockets: a classic BPF
 * program attached to a proc connector socket (SO_ATTACH_FILTER), so that
 * events the listener would read only to drop never reach it, and so that
 * a root listing waits only for the events that change the index. */
#ifndef PROCFAST_PROC_FILTER_H
#define PROCFAST_PROC_FILTER_H

#include <linux/cn_proc.h>

/* The events the listener applies (proc_events.c): the kernel's own filter
 * (Linux 6.6+) is asked for these, and the socket filters pass no others. */
#define PROC_EVENTS_WANTED (PROC_EVENT_FORK | PROC_EVENT_EXEC | PROC_EVENT_EXIT | \
			    PROC_EVENT_UID | PROC_EVENT_GID)
/* Of those, the ones a thread that is not its group's leader sends and the
 * listener applies: they drop cached names, and never change the index. */
#define PROC_EVENTS_OF_THREADS (PROC_EVENT_EXIT | PROC_EVENT_UID | PROC_EVENT_GID)

/* Which events a socket is for. The listener reads two sockets where it
 * can: a program that starts and ends thousands of threads a second sends an
 * exit event for each, and a root listing, which applies what is queued
 * before it lists, then had them all to read first. */
enum proc_filter_side {
	/* all of PROC_EVENTS_WANTED but threads' forks: one socket for all */
	PROC_FILTER_ALL,
	/* what changes the index: forks of processes, execs, and leaders' exits
	 * and id changes */
	PROC_FILTER_PROCESSES,
	/* the rest: exits and id changes of threads that are not leaders */
	PROC_FILTER_THREADS,
};

/* Attaches to sock the filter of side. Each passes the answers to listen
 * requests (PROC_EVENT_NONE) and a datagram too short to tell; none passes a
 * thread's FORK, which tells the index nothing (it marks thread-group
 * leaders), though a program making threads sends one each. The kernel's own
 * filter cannot tell a thread from a process, and kernels before 6.6 have
 * none. 0 or -errno. */
int proc_filter_attach(int sock, enum proc_filter_side side);

/* Whether the listener applies m on the socket of side: the filters' rule,
 * asked again of each event, so that an event a filter could not drop
 * (none attached, a datagram too short for it) is applied on one socket. */
struct proc_msg;
int proc_filter_side_has(enum proc_filter_side side, const struct proc_msg *m);

#endif
