/* Least privilege: what the daemon keeps once it serves.
 *
 * Every request is answered by a worker thread acting as the caller
 * (fs/caller/caller.h), so the daemon keeps every capability procfs may check for a
 * caller it stands for; man/procfast.8 (PRIVILEGES) gives the reason for
 * each, and tests/access/test_privileges.py compares this list, the man page and the
 * running daemon. The list is one capability name a line between the
 * markers. */
#ifndef PROCFAST_PRIVILEGES_H
#define PROCFAST_PRIVILEGES_H

#include <linux/capability.h>

/* BEGIN KEPT CAPABILITIES */
#define PROCFAST_KEPT_CAPS \
	CAP_CHOWN, \
	CAP_DAC_OVERRIDE, \
	CAP_DAC_READ_SEARCH, \
	CAP_FOWNER, \
	CAP_FSETID, \
	CAP_KILL, \
	CAP_SETGID, \
	CAP_SETUID, \
	CAP_SETPCAP, \
	CAP_NET_BIND_SERVICE, \
	CAP_NET_ADMIN, \
	CAP_NET_RAW, \
	CAP_SYS_RAWIO, \
	CAP_SYS_CHROOT, \
	CAP_SYS_PTRACE, \
	CAP_SYS_ADMIN, \
	CAP_SYS_NICE, \
	CAP_SYS_RESOURCE, \
	CAP_SYS_TIME, \
	CAP_MKNOD, \
	CAP_AUDIT_WRITE, \
	CAP_AUDIT_CONTROL, \
	CAP_SETFCAP, \
	CAP_SYSLOG, \
	CAP_CHECKPOINT_RESTORE
/* END KEPT CAPABILITIES */

/* Reduces the permitted and effective sets to PROCFAST_KEPT_CAPS (what the
 * daemon has of them), empties the inheritable and ambient sets and sets
 * no_new_privs. Must run before the process starts any thread: capabilities
 * are per thread. A daemon without capabilities (a user's own mount) has
 * nothing to drop and is left as it is. 0 or -errno.
 *
 * The bounding set is left to the supervisor: its upgrade executes the new
 * binary, which as root gets its bounding set, cut by no_new_privs to the
 * kept set. Emptied, it would leave the upgraded daemon with nothing. */
int privileges_drop(void);

/* Empties the bounding set, for a process that never executes anything (a
 * server). 0 or -errno. */
int privileges_seal(void);

/* The daemon possesses no keyring: it joins a new anonymous session keyring
 * that nobody may see or search. procfs's keys shows a reader the keys it
 * may view, those it possesses among them; a daemon reading as a caller
 * would otherwise show it the keys of the daemon's session (or of root's
 * user session, which a process without one falls back to). Keyrings are
 * per thread: before any thread. 0 or -errno (ENOSYS: no keys here). */
int privileges_drop_keyrings(void);

#endif
