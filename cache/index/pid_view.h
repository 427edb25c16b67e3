/* The pid namespace a mount shows (-o pidns=).
 *
 * A view's names and source paths carry the view's pids, as a procfs mounted
 * inside that namespace would show them; pidfds, kcmp, FUSE callers and
 * process events carry the daemon's. This translates between the two with
 * the nsfs ioctls (Linux 6.8+), one syscall each, or where the kernel has
 * none of them (or -o without=pid_ioctl) through a process in the view's
 * namespace (cache/index/pid_translator.h), some microseconds each. Without a
 * view both are the identity.
 *
 * Leaders' translations are also remembered, for the event listener: an
 * EXIT event may be read after the process was reaped, when the kernel can
 * no longer translate its pid.
 */
#ifndef PROCFAST_PID_VIEW_H
#define PROCFAST_PID_VIEW_H

#include <sys/types.h>

/* nsfd: the namespace's nsfs file (kept, or closed once the translator's
 * spawner entered it), or -1 for the daemon's own namespace. Before any
 * thread. 0, or -errno (-ESRCH: the namespace has no init any more). */
int pid_view_init(int nsfd);
int pid_view_active(void);

/* 0 when the task has no pid on the other side. */
pid_t pid_view_to_daemon(pid_t view_pid);
pid_t pid_view_from_daemon(pid_t daemon_pid);

/* The index's writer only (one thread at a time). */
pid_t pid_view_leader_born(pid_t daemon_tgid);  /* translates and remembers */
void pid_view_leader_seen(pid_t view_tgid);     /* found by a scan: remembers */
pid_t pid_view_leader_known(pid_t daemon_tgid); /* remembered, or 0 */
void pid_view_leader_gone(pid_t daemon_tgid);

#endif
