/* The mount's settings, decided once at start-up, read by every operation. */
#ifndef PROCFAST_SETTINGS_H
#define PROCFAST_SETTINGS_H

struct procfast {
	const char *source;  /* path of the procfs we mirror */
	int srcfd;           /* its root, O_PATH */
	int indexfd;         /* the same, without hidepid=: what the index scans */
	int same_pid_ns;     /* the source's pids are the daemon's own */
	int selfproc;        /* the daemon's own /proc, for facts about callers */
	int read_only;
	int snapshot;        /* -o snapshot: an open's content made at open (fs/request/snapshot.c) */
	int no_dedup;        /* -o nodedup: the kernel's layout for thread fd/ */
	int no_poll;         /* -o nopoll: POLL answered ENOSYS (fs/request/poll.c) */
	int hide_level;      /* hidepid: 0 off, 1 noaccess, 2 invisible, 4 ptraceable */
	double entry_timeout; /* kernel cache lifetimes, for what may be cached */
	double attr_timeout;
};

extern struct procfast pf;

#endif
