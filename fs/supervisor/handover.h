/* What one procfast process passes on to the procfast it executes: an
 * upgrade (SIGHUP), a takeover's successor (takeover.h), or a server of a
 * handed-over mount (mount_slot.h). It is one versioned record, written into
 * a memfd and named by one environment variable (HANDOVER_ENV); the fds it
 * names stay open across the execve. Only this module reads and writes it:
 * handover.c the record's format, handover_legacy.c the variables of the
 * release before, handover_env.c passing it on and taking it.
 *
 * Versions: the record carries the version of its writer and the oldest
 * reader version that may read it. Every field is tagged and sized: a newer
 * reader reads an older record (a field not there keeps its default), an
 * older reader skips the tags it does not know. */
#ifndef PROCFAST_HANDOVER_H
#define PROCFAST_HANDOVER_H

#include <stddef.h>

#define HANDOVER_ENV "PROCFAST_HANDOVER_FD"
#define HANDOVER_VERSION 1
/* A record's size is bounded: a handed-over mount's command line is at most
 * 256 arguments (control.c), and a supervisor holds a few hundred mounts. */
#define HANDOVER_MAX_BYTES (16u << 20)
#define HANDOVER_MAX_ARGS 256

struct mount_slot;

enum handover_serve {
	HANDOVER_SUPERVISE,      /* not a server: mount, or resume session_fd */
	HANDOVER_SERVE_FIRST,    /* a server; the kernel's INIT is still to come */
	HANDOVER_SERVE_RESUMED,  /* a server after another: the connection is set up */
};

struct handover {
	unsigned version;        /* the writer's (0: the legacy variables) */
	int session_fd;          /* the session fd to serve or supervise, or -1 */
	enum handover_serve serve;
	int pidns_fd;            /* a server: pidns= as an open file, or -1 */
	int ready_fd;            /* a first server: where to say INIT was answered, or -1 */
	int rings_fd;            /* the mount's ring buffers' memfd (a server's, or the
				  * supervisor's own mount's), or -1 */
	int nodes_fd;            /* the mount's node record (cache/nodes/node_record.h), or -1 */
	int log_syslog;          /* the supervisor logs to syslog */
	int control_fd;          /* upgrade: the control= socket, or -1 */
	int init_pending;        /* upgrade: the own mount's INIT is not answered yet */
	int successor_fd;        /* upgrade: a takeover's successor, or -1 */
	struct mount_slot **mounts; /* upgrade: the handed-over mounts (their fd, nsfd,
				     * ready, conn, rings_fd, nodes_fd, mount point, argv) */
	size_t nmounts;
};

/* Nothing to pass on: every fd -1. */
void handover_init(struct handover *h);

/* Frees h's mounts without closing the fds they name (see handover_close). */
void handover_forget(struct handover *h);

/* ---- the format (handover.c), touching no fd: for tests and fuzzing too ---- */

/* h as a record in a malloc'd *buf of *len bytes; 0 or -errno. */
int handover_encode(const struct handover *h, char **buf, size_t *len);

/* The record in buf into h (handover_init'd first; mounts allocated).
 * -EINVAL for a damaged record (h then holds nothing), -EPROTONOSUPPORT for
 * one that says a reader of our version cannot read it. */
int handover_decode(const char *buf, size_t len, struct handover *h);

/* ---- the release before's environment variables (handover_legacy.c) ---- */

/* The variables of the release before, with the table of handed-over
 * mounts they name (the slot table), converted into h; unset. -errno if the
 * table is damaged (h then holds the rest, and no mount). */
int handover_from_legacy(struct handover *h);

/* Sets them from h, for a binary of the release before (a rollback). *table:
 * the memfd of the mounts' table, left open across execve, or -1. */
int handover_to_legacy(const struct handover *h, int *table);

/* Unsets every variable of either kind. */
void handover_unset_env(void);

/* Beside a record that was read: closes the legacy table's memfd, and
 * unsets every variable. */
void handover_drop_legacy(void);

/* The legacy table of handed-over mounts (for the fuzz target): one slot
 * written to fd; the slots in buf appended to *slots. */
int slot_table_write(int fd, const struct mount_slot *s);
int slot_table_parse(char *buf, size_t len, struct mount_slot ***slots, size_t *n);

/* ---- passing on, taking (handover_env.c) ---- */

/* The memfds of one pass, to undo it if the execve does not happen. */
struct handover_pass {
	int record;
	int table;
};

/* Names h in the environment: the record's memfd in HANDOVER_ENV, and, for
 * one release, the legacy variables beside it; every fd h names is left
 * open across execve. 0, or -errno (then undone). */
int handover_pass_on(const struct handover *h, struct handover_pass *p);

/* The legacy variables alone (a takeover, which carries the record as
 * bytes and must pass the fds the release before passed: takeover.c). */
int handover_pass_legacy(const struct handover *h, struct handover_pass *p);

/* Undoes a pass whose execve did not happen: the fds are close-on-exec again. */
void handover_unpass(const struct handover *h, struct handover_pass *p);

/* In the process executed: what it was handed (the record, else the legacy
 * variables, else nothing), every fd close-on-exec again and every variable
 * unset. 0, or -errno for a damaged legacy table (h then holds the rest). */
int handover_take(struct handover *h);

/* The fds h names (for a takeover's SCM_RIGHTS), at most max; their count. */
size_t handover_fds(const struct handover *h, int *fds, size_t max);

/* The successor of a takeover: the record's bytes, received, in a memfd of
 * its own named in the environment as a pass names it. 0 or -errno. */
int handover_put_record(const char *buf, size_t len);

/* The names of the legacy variables an upgrade's pass sets (a takeover
 * carries them to the successor, and the record apart), NULL-terminated. */
extern const char *const handover_passed_env[];

#endif
