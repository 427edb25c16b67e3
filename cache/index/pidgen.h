/* Process generations: a number that differs between two processes that
 * held the same pid, so a node or handle made for one never serves the other.
 *
 * On pidfs kernels (6.9+) it is the pidfd's inode number, unique per struct
 * pid for the whole boot, read with pidfd_open + fstat (no file to parse).
 * Elsewhere it is the start time from the source's PID/stat.
 */
#ifndef PROCFAST_PIDGEN_H
#define PROCFAST_PIDGEN_H

#include <stdint.h>
#include <sys/types.h>

/* Chooses the method once. srcfd is the source procfs root; same_ns says
 * whether its pids are the daemon's own (pidfds then name the same tasks). */
void pidgen_init(int srcfd, int same_ns);

/* A request starts: answers about tasks may be reused until the next one
 * (only in the calling thread). */
void pidgen_begin(void);

/* 0 and *gen set, or -ENOENT when no such task exists now. */
int pidgen_get(pid_t pid, uint64_t *gen);

/* 0 when pid still names the task of generation gen, else -ENOENT. */
int pidgen_check(pid_t pid, uint64_t gen);

/* 1 when the task has exited (a zombie, or gone), 0 while it runs: whether
 * what the kernel caches about it could soon be wrong. */
int pidgen_exited(pid_t pid);

/* 1 when pid names a thread-group leader now (a zombie one too); 0 for a
 * thread id or a free pid. */
int pidgen_is_leader(pid_t pid);

/* The thread group pid belongs to: pid itself for a leader (or when that
 * cannot be told), else its leader's. */
pid_t pidgen_group(pid_t pid);

/* 1 once the task has begun to exit (PF_EXITING) or is gone, where
 * pidgen_exited() may still say 0. */
int pidgen_exiting(pid_t pid);

const char *pidgen_method(void);

#endif
