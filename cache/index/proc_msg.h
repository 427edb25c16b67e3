/* What the proc connector sends and is sent: netlink messages, each holding a
 * cn_msg that holds a struct proc_event, and the requests to listen or to stop.
 * Pure (no I/O, no state), so the listener (proc_events.c), its unit tests and
 * the fuzz target (tests/fuzz) run the same code on the same bytes.
 */
#ifndef PROCFAST_PROC_MSG_H
#define PROCFAST_PROC_MSG_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* One event, reduced to what procfast uses. */
struct proc_msg {
	uint32_t what;   /* PROC_EVENT_*: NONE is the answer to a listen request */
	uint32_t ack;    /* cn_msg ack: a request's ack + 1 in its answer */
	uint32_t err;    /* NONE: the request's error code */
	pid_t pid, tgid; /* FORK: the child; every other event: the process */
	uint64_t stamp_ns; /* when it was sent: CLOCK_MONOTONIC of the initial time namespace */
};

/* Decodes the next proc connector message of buf (len bytes as received,
 * any alignment) from *off on into *m and moves *off past it. Returns 1 when
 * a message was decoded, 0 at the end. Messages of other connectors are
 * skipped; an event shorter than struct proc_event reads as zeros past its
 * end; a malformed netlink header ends the buffer (as NLMSG_OK would). */
int proc_msg_next(const void *buf, size_t len, size_t *off, struct proc_msg *m);

/* Room for any request proc_msg_request builds (a netlink header, a cn_msg and
 * at most a struct proc_input), aligned as netlink wants. */
#define PROC_MSG_REQUEST_SPACE 64

/* Builds into buf (PROC_MSG_REQUEST_SPACE bytes, zeroed here) the request to
 * the proc connector whose data is op (oplen bytes: a proc_cn_mcast_op, or the
 * struct proc_input of Linux 6.6+), with ack as its cn_msg ack: the answer
 * carries ack + 1. Returns the length to send, 0 when op does not fit. */
size_t proc_msg_request(void *buf, const void *op, size_t oplen, uint32_t ack);

#endif
