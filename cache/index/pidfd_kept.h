/* Pidfds kept from earlier generation probes (pidgen.h), so that a request
 * about a task asked about before costs one poll() instead of a pidfd_open,
 * an fstat, a poll and a close (5.5 µs against 0.35 here): tools ask about
 * one process several times in a row (ps: stat, status, cmdline, each an
 * OPEN and a READ).
 *
 * A kept pidfd pins its task's struct pid, whose pidfs inode is the
 * generation. While the task runs, the pid names it and no other, so a poll
 * that says it runs answers the probe exactly as a fresh one would; once it
 * exited, the pid may name another task: the pidfd is closed and the probe
 * made afresh. One slot a pid (by its value modulo the slots), a lock each.
 *
 * The fds come out of what the daemon keeps for its own work (fair.h), and
 * one is kept only far below RLIMIT_NOFILE as it is at that moment: a
 * daemon near its limit keeps none, and every fd it has is its callers'.
 */
#ifndef PROCFAST_PIDFD_KEPT_H
#define PROCFAST_PIDFD_KEPT_H

#include <stdint.h>
#include <sys/types.h>

/* At most slots pidfds kept (0: none). Once, before any probe; 0 or -1. */
int pidfd_kept_init(unsigned slots);

/* Closes every kept pidfd. */
void pidfd_kept_destroy(void);

/* 1 and *gen where a kept pidfd of pid shows its task running; else 0 (a
 * kept pidfd of an exited task is closed). */
int pidfd_kept_running(pid_t pid, uint64_t *gen);

/* Keeps *fd, a pidfd of pid's running task of generation gen, in pid's
 * slot (closing what the slot held): *fd becomes -1. Left to the caller
 * where none is kept. */
void pidfd_kept_put(pid_t pid, int *fd, uint64_t gen);

/* How many pidfds are kept now (tests). */
unsigned pidfd_kept_count(void);

#endif
