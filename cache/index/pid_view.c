#include "cache/index/pid_view.h"
#include "cache/index/pid_translator.h"
#include "fs/lib/kernel_feature.h"
#include "fs/lib/log.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/nsfs.h>

#ifndef NS_GET_PID_FROM_PIDNS
#define NS_GET_PID_FROM_PIDNS _IOR(NSIO, 0x6, int)
#define NS_GET_PID_IN_PIDNS _IOR(NSIO, 0x8, int)
#endif

#define MAX_PID (1 << 22) /* PID_MAX_LIMIT */
#define CHUNK 1024

static int view_fd = -1; /* the namespace's file, for the ioctls */
static int active;       /* a view: by the ioctls, or by the translator */
/* daemon tgid -> view tgid for the leaders the view holds, in chunks made
 * on first use: pids cluster, so few chunks are ever touched. */
static pid_t *leader_map[MAX_PID / CHUNK];

/* The daemon itself is outside the view: ESRCH proves the ioctl exists. */
static int ioctl_works(int nsfd)
{
	return kernel_feature_allowed(KF_PID_IOCTL) &&
	       (ioctl(nsfd, NS_GET_PID_IN_PIDNS, getpid()) >= 0 || errno == ESRCH);
}

int pid_view_init(int nsfd)
{
	int r;

	if (nsfd < 0)
		return 0;
	if (ioctl_works(nsfd)) {
		view_fd = nsfd;
		active = 1;
		return 0;
	}
	if ((r = pid_translator_start(nsfd)))
		return r;
	close(nsfd); /* the spawner has entered it */
	active = 1;
	log_info("pidns view: pids translated by a process in the namespace (%s)",
		 kernel_feature_allowed(KF_PID_IOCTL) ? "the kernel has no nsfs pid ioctls"
						      : "without=pid_ioctl");
	return 0;
}

int pid_view_active(void)
{
	return active;
}

static pid_t translate(unsigned long op, pid_t pid)
{
	int r;

	if (!active)
		return pid;
	if (pid <= 0)
		return 0;
	if (view_fd < 0)
		return op == NS_GET_PID_FROM_PIDNS ? pid_translator_to_daemon(pid)
						   : pid_translator_from_daemon(pid);
	r = ioctl(view_fd, op, pid);
	return r > 0 ? r : 0;
}

pid_t pid_view_to_daemon(pid_t view_pid)
{
	return translate(NS_GET_PID_FROM_PIDNS, view_pid);
}

pid_t pid_view_from_daemon(pid_t daemon_pid)
{
	return translate(NS_GET_PID_IN_PIDNS, daemon_pid);
}

static pid_t *map_slot(pid_t pid, int create)
{
	pid_t **chunk;

	if (pid <= 0 || pid >= MAX_PID)
		return NULL;
	chunk = &leader_map[pid / CHUNK];
	if (!*chunk && create)
		*chunk = calloc(CHUNK, sizeof(pid_t));
	return *chunk ? &(*chunk)[pid % CHUNK] : NULL;
}

static void remember(pid_t daemon_tgid, pid_t view_tgid)
{
	pid_t *slot = map_slot(daemon_tgid, view_tgid != 0);

	if (slot)
		*slot = view_tgid;
}

pid_t pid_view_leader_born(pid_t daemon_tgid)
{
	pid_t v = pid_view_from_daemon(daemon_tgid);

	if (active)
		remember(daemon_tgid, v); /* 0: a reused pid outside the view */
	return v;
}

void pid_view_leader_seen(pid_t view_tgid)
{
	pid_t d;

	if (active && (d = pid_view_to_daemon(view_tgid)))
		remember(d, view_tgid);
}

pid_t pid_view_leader_known(pid_t daemon_tgid)
{
	pid_t *slot;

	if (!active)
		return daemon_tgid;
	slot = map_slot(daemon_tgid, 0);
	return slot ? *slot : 0;
}

void pid_view_leader_gone(pid_t daemon_tgid)
{
	pid_t *slot = !active ? NULL : map_slot(daemon_tgid, 0);

	if (slot)
		*slot = 0;
}
