/* Kernel interfaces procfast uses where the kernel has them, and falls back
 * from where it has not. -o without=NAME[:NAME...] makes the daemon behave as
 * on a kernel without them, so that every fallback is tested on a kernel that
 * has the interface too (README: "What each kernel gets"). */
#ifndef PROCFAST_KERNEL_FEATURE_H
#define PROCFAST_KERNEL_FEATURE_H

enum kernel_feature {
	KF_PIDFS,        /* pidfs inode numbers as generations (6.9) */
	KF_PID_IOCTL,    /* nsfs pid translation ioctls for pidns= views (6.8) */
	KF_EVENT_FILTER, /* the proc connector's per-socket event filter (6.6) */
	KF_PASSTHROUGH,  /* FUSE passthrough, for -o snapshot (6.9) */
	KF_COUNT
};

/* list: names separated by ':' (a comma would end the -o option).
 * 0, or -1 with the unknown name printed. */
int kernel_feature_disable(const char *list);

/* 0 when -o without= took it away; the caller still probes the kernel. */
int kernel_feature_allowed(enum kernel_feature f);

const char *kernel_feature_name(enum kernel_feature f);

#endif
