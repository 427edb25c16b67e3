/* procfast's own -o options; the rest go to libfuse and the kernel. */
#ifndef PROCFAST_OPTIONS_H
#define PROCFAST_OPTIONS_H

#include <fuse_lowlevel.h>

struct options {
	char *source;      /* -o source=DIR, default /proc */
	int read_only;     /* -o ro (also given to the kernel) */
	int no_allow_other;
	int no_dedup;         /* -o nodedup */
	int no_poll;          /* -o nopoll */
	int no_restart;       /* -o norestart: no supervisor */
	int snapshot;         /* -o snapshot: FUSE passthrough of a snapshot made at open */
	int has_allow_other;
	double entry_timeout; /* -o entry_timeout=SECONDS, for names that live as long as their directory */
	double attr_timeout;  /* -o attr_timeout=SECONDS */
	char *events;         /* -o events=on|off */
	int event_rcvbuf;     /* -o event_rcvbuf=BYTES */
	unsigned scan_ms;     /* -o scan_lifetime=MS, without events */
	char *pidns;          /* -o pidns=FILE */
	char *hidepid;        /* -o hidepid=, subset=, gid=: procfs's own */
	int hide_level;       /* hidepid as a number: 0, 1, 2 or 4 */
	char *subset;
	char *gid;
	char *control;        /* -o control=SOCKET: serve other mounts handed over there */
	char *daemon;         /* -o daemon=SOCKET: hand this mount to the daemon there */
	int takeover;         /* -o takeover: succeed the daemon at control= (takeover.h) */
	char *pidfile;        /* -o pidfile=FILE: the supervisor's pid, once ready */
	char *resources;      /* -o resources=off|init|caller */
	int res_mode;         /* its enum res_mode */
	char *cgroup_root;    /* -o cgroup_root=DIR: a scratch cgroup tree (tests) */
	char *uring;          /* -o uring=auto|on|off */
	int uring_mode;       /* its enum transport_mode */
	unsigned uring_threads; /* -o uring_threads=N: threads serving each CPU's queue */
	unsigned max_handles_per_uid;       /* -o max_handles_per_uid=N (0: fs/caller/fair.h's default) */
	unsigned max_handles_per_container; /* -o max_handles_per_container=N */
	unsigned max_busy_per_uid;          /* -o max_busy_per_uid=N, of each pool of threads */
	char *without;        /* -o without=NAME[:NAME...]: kernel interfaces not to use (tests) */
	int has_max_threads;  /* libfuse's -o max_threads= was given (else main.c's default) */
	int auto_unmount;     /* libfuse's, seen for daemon= */
	char *positional[2];  /* [DEVICE] MOUNTPOINT as given */
	int npositional;
};

/* Removes procfast's options from args and adds the mount options procfast
 * wants by default. 0 or -1 with a message printed. */
int options_parse(struct fuse_args *args, struct options *o);

void options_free(struct options *o);

void options_help(void);

#endif
