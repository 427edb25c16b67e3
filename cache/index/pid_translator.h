/* Pid translation for a pidns= view where the nsfs ioctls are missing
 * (before Linux 6.8, or -o without=pid_ioctl).
 *
 * The kernel translates the pid of a unix socket's credential message
 * (SCM_CREDENTIALS): the sender names a pid of its own pid namespace, which
 * a sender with CAP_SYS_ADMIN over that namespace may do for any task,
 * threads included (net/core/scm.c, __scm_send and scm_check_creds), and a
 * receiver with SO_PASSCRED reads it as its own namespace numbers it, 0 when
 * the task has none there (pid_vnr in the receive path). So:
 *
 *  - a "spawner" process in the daemon's namespace, made at start while the
 *    daemon has one thread and all its rights, enters the view's namespace
 *    for its children and keeps CAP_SYS_ADMIN alone;
 *  - it forks a translator per server, born in the view's namespace (one of
 *    its processes, named NS_TRANSLATOR_COMM, which a procfs of that
 *    namespace shows too), and made again when it died;
 *  - view -> daemon: the server sends the view's pid as data, the translator
 *    answers with a credential message naming it, read translated;
 *  - daemon -> view: the spawner sends the translator a credential message
 *    naming the daemon's pid (a worker thread may not: it holds only its
 *    caller's capabilities), the translator reads it translated and answers
 *    the number as data.
 *
 * Each translation is two or three messages between processes, about ten
 * microseconds, against one ioctl. Worker threads share one translator,
 * one request at a time.
 */
#ifndef PROCFAST_PID_TRANSLATOR_H
#define PROCFAST_PID_TRANSLATOR_H

#include <sys/types.h>

#define NS_TRANSLATOR_COMM "procfast-pidns"

/* nsfd: the view's pid namespace file. Before any thread, with the rights
 * to enter it. Makes the spawner and proves one translation. 0 or -errno
 * (ESRCH: the namespace has no init any more). */
int pid_translator_start(int nsfd);

/* 0 when the task has no pid on the other side, or the namespace is gone. */
pid_t pid_translator_to_daemon(pid_t view_pid);
pid_t pid_translator_from_daemon(pid_t daemon_pid);

#endif
