/* procfast-enter: the entrypoint of a container whose workload sees its own
 * procfast view over /proc, with the OCI hook's io.procfast.view=root.
 *
 *   procfast-enter [-t SECONDS] [-u UID[:GID]] DIR COMMAND [ARG...]
 *
 * The hook cannot put the view over the container's /proc (runc checks that
 * it is a procfs, see attach/root_view.c): it makes DIR a second root whose
 * /proc is the view. This waits until DIR/proc is a FUSE mount (the hook runs
 * before the entrypoint, but a runtime that runs hooks late is waited for, up
 * to SECONDS, default 30), chroots into DIR, goes back to the working
 * directory it had (the same path in DIR), and executes COMMAND, so PID 1 is
 * the workload. Needs CAP_SYS_CHROOT (container root has it by default):
 * for a workload that runs as another user (podman --user), run this as root
 * and give -u, which it takes after the chroot (groups: GID only; GID 0 when
 * left out, as podman does for a uid that /etc/passwd does not name).
 *
 * Exits 125 when it cannot enter, 126 when COMMAND cannot be executed, 127
 * when it is not found (the codes of podman run and env). Static: images
 * need no C library for it.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include <linux/magic.h>

#include "fs/lib/cleanup.h"

#ifndef FUSE_SUPER_MAGIC
#define FUSE_SUPER_MAGIC 0x65735546
#endif

#define EXIT_CANNOT_ENTER 125

struct options {
	long timeout_ms;
	int switch_user;
	uid_t uid;
	gid_t gid;
};

static int fail(const char *what, int err)
{
	fprintf(stderr, "procfast-enter: %s: %s\n", what, strerror(err));
	return EXIT_CANNOT_ENTER;
}

static int usage(void)
{
	fprintf(stderr, "usage: procfast-enter [-t SECONDS] [-u UID[:GID]] DIR COMMAND [ARG...]\n"
			"Waits for the procfast view at DIR/proc, chroots into DIR and executes COMMAND.\n");
	return EXIT_CANNOT_ENTER;
}

/* A decimal number up to max, all of s; -1 otherwise. */
static long parse_number(const char *s, long max)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	return errno || end == s || *end || v < 0 || v > max ? -1 : v;
}

/* "UID" or "UID:GID", numeric: no passwd lookups in a static binary. */
static int parse_user(char *s, struct options *o)
{
	char *colon = strchr(s, ':');
	long uid, gid = 0;

	if (colon)
		*colon = '\0';
	uid = parse_number(s, INT_MAX);
	if (colon)
		gid = parse_number(colon + 1, INT_MAX);
	if (uid < 0 || gid < 0)
		return -EINVAL;
	o->uid = (uid_t)uid;
	o->gid = (gid_t)gid;
	o->switch_user = 1;
	return 0;
}

static int parse_options(int argc, char *argv[], struct options *o)
{
	long seconds;
	int c;

	o->timeout_ms = 30000;
	while ((c = getopt(argc, argv, "+t:u:")) != -1) {
		switch (c) {
		case 't':
			seconds = parse_number(optarg, 86400);
			if (seconds < 0)
				return -EINVAL;
			o->timeout_ms = seconds * 1000;
			break;
		case 'u':
			if (parse_user(optarg, o))
				return -EINVAL;
			break;
		default:
			return -EINVAL;
		}
	}
	return argc - optind >= 2 && argv[optind][0] == '/' ? 0 : -EINVAL;
}

static int is_fuse(const char *path)
{
	struct statfs s;

	return !statfs(path, &s) && s.f_type == FUSE_SUPER_MAGIC;
}

static long ms_until(const struct timespec *end)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (end->tv_sec - now.tv_sec) * 1000 + (end->tv_nsec - now.tv_nsec) / 1000000;
}

/* Sleeps until our mount table changes (procfs reports it as POLLPRI on
 * mountinfo), checking at least every 100 ms in case it cannot tell us. */
static int wait_for_view(const char *dir, long timeout_ms)
{
	char proc[PATH_MAX];
	struct timespec end;
	__do_close int mounts = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
	long left;

	if (snprintf(proc, sizeof(proc), "%s/proc", dir) >= (int)sizeof(proc))
		return -ENAMETOOLONG;
	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += timeout_ms / 1000;
	end.tv_nsec += (timeout_ms % 1000) * 1000000;
	while (!is_fuse(proc)) {
		left = ms_until(&end);
		if (left <= 0)
			return -ETIMEDOUT;
		poll(&(struct pollfd){ .fd = mounts, .events = POLLPRI }, 1, left < 100 ? left : 100);
	}
	return 0;
}

/* The same working directory inside dir: runc gave us the container's
 * (podman -w), and outside the new root would be an escape from it. */
static int enter(const char *dir)
{
	char cwd[PATH_MAX];

	if (!getcwd(cwd, sizeof(cwd)))
		strcpy(cwd, "/");
	if (chroot(dir))
		return -errno;
	return chdir(cwd) ? -errno : 0;
}

static int become(const struct options *o)
{
	if (!o->switch_user)
		return 0;
	if (setgroups(1, &o->gid) || setgid(o->gid) || setuid(o->uid))
		return -errno;
	return 0;
}

int main(int argc, char *argv[])
{
	struct options o = { 0 };
	const char *dir;
	int r;

	if (parse_options(argc, argv, &o))
		return usage();
	dir = argv[optind];
	r = wait_for_view(dir, o.timeout_ms);
	if (r == -ETIMEDOUT) {
		fprintf(stderr, "procfast-enter: no procfast view at %s/proc after %ld s\n", dir,
			o.timeout_ms / 1000);
		return EXIT_CANNOT_ENTER;
	}
	if (r)
		return fail(dir, -r);
	r = enter(dir);
	if (r)
		return fail(dir, -r);
	r = become(&o);
	if (r)
		return fail("switching user", -r);
	execvp(argv[optind + 1], argv + optind + 1);
	r = errno;
	fail(argv[optind + 1], r);
	return r == ENOENT ? 127 : 126;
}
