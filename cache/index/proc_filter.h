/* What the kernel keeps from the listener's socket: a classic BPF program
 * attached to the proc connector socket (SO_ATTACH_FILTER), so that events
 * the listener would read only to drop never reach it. */
#ifndef PROCFAST_PROC_FILTER_H
#define PROCFAST_PROC_FILTER_H

#include <linux/cn_proc.h>

/* The events the listener applies (proc_events.c): the kernel's own filter
 * (Linux 6.6+) is asked for these, and the socket filter passes no others. */
#define PROC_EVENTS_WANTED (PROC_EVENT_FORK | PROC_EVENT_EXEC | PROC_EVENT_EXIT | \
			    PROC_EVENT_UID | PROC_EVENT_GID)

/* Attaches to sock a filter that passes the answers to listen requests
 * (PROC_EVENT_NONE), the events of PROC_EVENTS_WANTED, and of the forks only
 * those of a process: a thread's FORK tells the index nothing (it marks
 * thread-group leaders), yet a program making threads sends one each. The
 * kernel's own filter cannot tell a thread from a process, and kernels before
 * 6.6 have none. A datagram too short to tell is passed. 0 or -errno. */
int proc_filter_attach(int sock);

#endif
