/* The server of a handed-over mount: executed by the supervisor with the
 * mount's hand-over record (handover.h), apart from mount_slot.c so that
 * the record, which holds slots, and the slot do not include each other. */
#ifndef PROCFAST_SLOT_SERVER_H
#define PROCFAST_SLOT_SERVER_H

#include <signal.h>
#include <sys/types.h>

#include "fs/supervisor/mount_slot.h"

/* Starts a server for a handed-over slot: fork, then execute our binary
 * with the slot's command line, told by a hand-over record (handover.h) to
 * serve that session fd, with the slot's ring buffers (made
 * for its first server). old: the signal mask servers run with. */
pid_t slot_server_start(struct mount_slot *s, const sigset_t *old);

#endif
