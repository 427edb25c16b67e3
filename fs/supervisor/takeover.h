/* A new daemon taking over the mounts of a running one (-o takeover), as a
 * Kubernetes DaemonSet's rollout needs: the new pod starts first, the old
 * one is stopped after, and every pod bound to the mounts reads on.
 *
 * The new daemon (the successor) registers at the old one's control= socket.
 * The old one answers with what its own upgrade would pass on to the binary
 * it executes (handover.h: the session fds, the table of handed-over mounts,
 * the control socket), as one versioned record with the fds attached, again
 * each time its mounts change. Holding those copies, the successor keeps
 * every connection alive whatever becomes of the old daemon. When the old
 * one is stopped, it stops its servers, sends the record once more marked
 * final, waits for the successor's word, and exits without unmounting; if it
 * dies instead, the successor's end of the socket closes. Either way the
 * successor puts the fds where the record names them and executes itself as
 * an upgrade would be executed: it resumes every mount.
 */
#ifndef PROCFAST_TAKEOVER_H
#define PROCFAST_TAKEOVER_H

#include <stddef.h>
#include <sys/types.h>

/* The registration's payload, which control.c tells from a mount handed over. */
#define TAKEOVER_HELLO "procfast-takeover 1"

/* -o takeover, before anything is mounted: registers at control, waits in
 * the background (or the foreground) as the successor, writes pidfile once
 * registered, and at the hand-over executes our binary with argv to resume
 * the mounts. Returns 0 when no daemon answers at control (mount as usual),
 * 1 when stopped before the hand-over (exit 0), -1 on failure (told). */
int takeover_succeed(const char *control, int foreground, const char *pidfile, char **argv);

/* Successor side. The connection to the daemon at path, registered and with
 * the first record in hand; -ENOENT or -ECONNREFUSED when no daemon answers
 * there, other -errno on failure. */
int takeover_register(const char *path);

/* Waits until the old daemon hands over (its final record, or its end) and
 * then makes this process's fds and environment what the record names, for
 * execv of our own binary. 0 then; 1 when a SIGTERM or SIGINT came first
 * (the old daemon goes on); -errno. Closes conn. */
int takeover_wait(int conn);

/* Old daemon side: sends the variables an upgrade sets now (handover.h,
 * passed on), with fds (those the hand-over record names, and the memfd of
 * the legacy table), the pids of its servers, and the record's bytes, final
 * or not.
 * For a final one, waits for the successor's word. 0, or -errno. */
int takeover_send(int conn, int final, const int *extra, size_t nextra, const pid_t *servers,
		  size_t nservers, const char *record, size_t record_len);

#endif
