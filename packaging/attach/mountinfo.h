/* Reading a mountinfo file (proc_pid_mountinfo(5)) without asking any
 * filesystem about its mounts: a FUSE mount whose daemon hangs must not hang
 * its own unmounting. */
#ifndef PROCFAST_ATTACH_MOUNTINFO_H
#define PROCFAST_ATTACH_MOUNTINFO_H

struct mount_entry {
	const char *mount_point; /* relative to the reading process's root, unescaped */
	const char *fstype;      /* "proc", "fuse.procfast", ... */
	unsigned int major, minor;
	int shared;              /* a peer group's member: mounts below it propagate */
};

/* Calls fn for each mount listed in path, in the order they were mounted,
 * until fn returns non-zero. 0, fn's non-zero value, or -errno. */
int mountinfo_each(const char *path, int (*fn)(const struct mount_entry *e, void *arg),
		   void *arg);

#endif
