#include "fs/resources/resources.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <linux/nsfs.h>

#include "cache/index/pid_view.h"
#include "fs/caller/reader_ns.h"
#include "fs/cgroup/cgroup_fs.h"
#include "fs/cgroup/cgroup_load.h"
#include "fs/lib/cleanup.h"
#include "fs/lib/log.h"
#include "fs/resources/render.h"

#ifndef NS_GET_PID_FROM_PIDNS
#define NS_GET_PID_FROM_PIDNS _IOR(NSIO, 0x6, int)
#endif

static enum res_mode mode = RES_OFF;
static int proc_fd = -1;

/* What makes each file; the table name_class.c's marks index. */
static const res_renderer renderers[RES_FILES] = {
	[RES_MEMINFO] = res_meminfo, [RES_CPUINFO] = res_cpuinfo, [RES_STAT] = res_stat,
	[RES_UPTIME] = res_uptime,   [RES_LOADAVG] = res_loadavg, [RES_SWAPS] = res_swaps,
	[RES_DISKSTATS] = res_diskstats,
};

int resources_init(enum res_mode m, const char *cgroup_root, int selfproc)
{
	mode = m;
	proc_fd = selfproc;
	if (m == RES_OFF)
		return 0;
	cgroup_fs_init(cgroup_root, selfproc);
	if (!cgroup_fs_available())
		log_warn("resources: no cgroup hierarchy found: every file is the host's");
	return cg_load_init(selfproc);
}

int resources_on(void)
{
	return mode != RES_OFF;
}

/* A task's thread group id in its own pid namespace (NStgid's last
 * number) and its parent's, from its status; -1 when gone. */
static int tgid_inside(pid_t task, pid_t *inside, pid_t *parent)
{
	char path[32], buf[2048];
	__do_close int fd = -1;
	const char *l;
	ssize_t n;

	snprintf(path, sizeof(path), "%d/status", task);
	if ((fd = openat(proc_fd, path, O_RDONLY | O_CLOEXEC)) < 0 ||
	    (n = read(fd, buf, sizeof(buf) - 1)) <= 0)
		return -1;
	buf[n] = '\0';
	if (!(l = strstr(buf, "\nPPid:")) || sscanf(l + 6, "%d", parent) != 1 ||
	    !(l = strstr(buf, "\nNStgid:")))
		return -1;
	l += 8;
	while (sscanf(l, " %d", inside) == 1) { /* outermost first: the last is its own */
		l += strspn(l, " \t");
		l += strspn(l, "0123456789");
	}
	return 0;
}

/* Before Linux 6.8 (no NS_GET_PID_FROM_PIDNS): the caller's nearest
 * ancestor that is pid 1 of the caller's namespace. Every task of a
 * namespace descends from its init there (orphans are reparented to it);
 * one that came in by setns() has no such ancestor: 0, as its init cannot
 * be told without a search. */
static pid_t init_by_ancestors(pid_t tid, unsigned long ns)
{
	pid_t p = tid, inside, parent;

	for (int depth = 0; p > 0 && depth < 256; depth++, p = parent) {
		if (reader_ns_of(p, RNS_PID) != ns || tgid_inside(p, &inside, &parent))
			return 0;
		if (inside == 1)
			return p;
	}
	return 0;
}

/* The init of tid's pid namespace, as a pid of the daemon's; 0 when tid
 * shares the daemon's namespace (or cannot be told). */
static pid_t namespace_init(pid_t tid)
{
	unsigned long ns = reader_ns_of(tid, RNS_PID);
	char path[40];
	__do_close int fd = -1;
	int init;

	/* the usual caller: one readlink of its link (reader_ns.c) */
	if (!ns || reader_ns_is_daemons(RNS_PID, ns))
		return 0;
	snprintf(path, sizeof(path), "%d/ns/pid", tid);
	if ((fd = openat(proc_fd, path, O_RDONLY | O_CLOEXEC)) < 0)
		return 0;
	init = ioctl(fd, NS_GET_PID_FROM_PIDNS, 1);
	if (init < 0 && (errno == ENOTTY || errno == EINVAL))
		return init_by_ancestors(tid, ns);
	return init > 0 ? init : 0;
}

struct res_target resources_target(pid_t caller_tid)
{
	struct res_target t = { 0, 0 };
	pid_t init;

	if (mode == RES_INIT) {
		t.cgroup = pid_view_active() ? pid_view_to_daemon(1) : 1;
		t.reaper = pid_view_active() ? t.cgroup : 0;
	} else if (mode == RES_CALLER && caller_tid > 0) {
		/* LXCFS: the container's init for every file, the caller itself
		 * for the cgroups when it shares the daemon's namespace, whose
		 * init's age is then the uptime */
		init = namespace_init(caller_tid);
		t.cgroup = init ? init : caller_tid;
		t.reaper = init ? init : 1;
	}
	return t;
}

int resources_render(enum res_file file, const struct res_target *target, const char *src,
		     char **out, size_t *out_len)
{
	struct cg_set cg;
	size_t size = 0;
	FILE *f;
	int r;

	*out = NULL;
	if (file <= RES_NONE || file >= RES_FILES || !target->cgroup)
		return 0;
	if ((r = cgroup_set(target->cgroup, &cg)))
		return r == -ENOMEM ? r : 0;
	if (!(f = open_memstream(out, &size)))
		return -ENOMEM;
	__fsetlocking(f, FSETLOCKING_BYCALLER); /* one thread's own stream */
	r = renderers[file](target, &cg, src, f);
	if (fclose(f) && r > 0)
		r = -ENOMEM;
	if (r <= 0) {
		free(*out);
		*out = NULL;
		if (r < 0)
			log_debug("resources: file %d for task %d: %s", file, target->cgroup,
				  strerror(-r));
		/* what the caller may not see, or what is not there, is the source's */
		return r == -ENOMEM ? r : 0;
	}
	*out_len = size;
	return 1;
}

/* The daemon's /proc, for the renderers' facts about tasks. */
int res_proc_fd(void)
{
	return proc_fd;
}
