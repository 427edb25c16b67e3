/* One mount the supervisor holds: its own (served by forked servers) or one
 * handed over by another procfast (served by servers that execute the
 * procfast binary with that mount's command line). */
#ifndef PROCFAST_MOUNT_SLOT_H
#define PROCFAST_MOUNT_SLOT_H

#include <signal.h>
#include <sys/types.h>
#include <time.h>

#include "fs/supervisor/join_request.h"

#define SLOT_MAX_DEATHS 5

struct mount_slot {
	int fd;             /* the mount's session fd */
	pid_t server;       /* its server, 0 while none runs */
	int ready;          /* a server answered INIT: the next one resumes */
	int ready_rd;       /* the first server's INIT report (a byte, or EOF), or -1 */
	int rings_fd;       /* the memfd its servers' ring buffers are in, or -1 */
	int nodes_fd;       /* the memfd a draining server leaves its node table in
			     * for the next (cache/nodes/node_record.h), or -1 */
	unsigned conn;      /* handed over: its fusectl number (fuse_conn.h), or 0 */
	time_t deaths[SLOT_MAX_DEATHS];
	int next_death;
	struct join_request join; /* handed over: how (fuse_fd is fd), else empty */
};

/* A slot for a mount handed over; takes the request's fds and strings. */
struct mount_slot *mount_slot_from_join(struct join_request *r);

/* Closes what the slot holds, answering a sender still waiting with err. */
void mount_slot_free(struct mount_slot *s, int err);

/* Makes the memfd a server of s leaves its node table in, if s has none. */
void mount_slot_hold_nodes(struct mount_slot *s);

/* Forks a server for s. In the child (0 returned) *ready_wr is where the
 * server says it answered INIT, or -1 when an earlier server set the
 * connection up; the supervisor keeps the other end (ready_rd). */
pid_t mount_slot_fork(struct mount_slot *s, int *ready_wr);


/* Makes the fds of s close-on-exec again (after an upgrade, or one that
 * failed: handover.h). */
void mount_slot_keep_fds(struct mount_slot *s);

/* Frees s without closing the fds it names (a slot read from a hand-over
 * record, which names fds that may not be ours). */
void mount_slot_forget(struct mount_slot *s);

#endif
