/* The procfs procfast mirrors. */
#ifndef PROCFAST_SOURCE_H
#define PROCFAST_SOURCE_H

struct source_spec {
	const char *path;    /* -o source=DIR: an existing procfs */
	const char *pidns;   /* -o pidns=FILE: a pid namespace's nsfs file */
	const char *hidepid; /* procfs's own options, given to a private instance */
	const char *subset;
	const char *gid;
};

/* Whether the spec asks for a private procfs instance. */
int source_is_private(const struct source_spec *s);

struct source {
	int root;  /* what is mirrored */
	int index; /* the same processes, unhidden: what the process index scans */
	int nsfd;  /* pidns=: the namespace file, else -1 */
};

/* 0, or -1 with a one-line message printed. */
int source_open(const struct source_spec *s, struct source *src);

/* Whether procfs (a root fd) is of the daemon's own pid namespace: its "self"
 * names the daemon. */
int source_names_us(int procfs);

/* A procfs of the daemon's own pid namespace, where the pids of its
 * requests name their callers: /proc if it is one, else a new instance (a
 * daemon started in a pid namespace with the host's /proc). fd, or -errno. */
int source_own_procfs(void);

/* The pidns= file, checked to be one: fd, or -1 with a message printed. */
int source_open_pidns(const char *path);

#endif
