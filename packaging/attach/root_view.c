/* --root: why a second root, and not the view over the container's /proc.
 *
 * runc refuses a /proc that is not a procfs: at creation, and (since the fix
 * for CVE-2024-21626) in every `runc exec` and in `runc create` after the
 * poststart hooks, where it checks that /proc/self/fd is on procfs. A view
 * over the container's own /proc therefore makes the container exit 1 and
 * every `podman exec` fail. So the runtime's /proc stays a procfs, and in the
 * container's mount namespace dir becomes a recursive bind of the container's
 * root, private (nothing mounted there propagates back), with the view in
 * place of the bind's copy of the runtime's procfs at dir/proc. The workload
 * runs chrooted into dir (procfast-enter).
 *
 * The runtime's own mounts below /proc are its masks (podman: /proc/bus, fs,
 * irq, sys and sysrq-trigger read-only; /proc/kcore, keys, timer_list ...
 * over /dev/null; /proc/acpi an empty tmpfs): the view would hide them, so a
 * clone of each is put back on top of the view, in the order they were
 * mounted, and the chrooted workload sees no more of /proc than the runtime
 * let it. If one cannot be put back, nothing is attached.
 */
#include "packaging/attach/root_view.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs/lib/cleanup.h"
#include "packaging/attach/mountinfo.h"
#include "packaging/attach/mountns.h"
#include "packaging/attach/report.h"

/* The container's mounts below /proc, and what dir is mounted on. */
struct submounts {
	const char *dir;
	char **path;
	int *clone; /* open_tree() clones, taken inside the namespace */
	size_t n;
	size_t parent_len; /* the longest mount point holding dir */
	int parent_shared;
};

static void submounts_free(struct submounts *s)
{
	for (size_t i = 0; i < s->n; i++) {
		free(s->path[i]);
		close_disarm(&s->clone[i]);
	}
	free(s->path);
	free(s->clone);
}

#define __do_free_submounts __attribute__((__cleanup__(submounts_free)))

/* Whether prefix is path or one of its ancestors. */
static int path_under(const char *path, const char *prefix)
{
	size_t n = strlen(prefix);

	if (!strcmp(prefix, "/"))
		return path[0] == '/';
	return !strncmp(path, prefix, n) && (path[n] == '/' || path[n] == '\0');
}

static int note_mount(const struct mount_entry *e, void *arg)
{
	struct submounts *s = arg;
	size_t len = strlen(e->mount_point);
	char **path;
	int *clone;

	if (path_under(s->dir, e->mount_point) && len >= s->parent_len) {
		s->parent_len = len;
		s->parent_shared = e->shared; /* the last one mounted there is on top */
	}
	if (strncmp(e->mount_point, "/proc/", 6))
		return 0;
	path = realloc(s->path, (s->n + 1) * sizeof(*path));
	if (!path)
		return -ENOMEM;
	s->path = path;
	clone = realloc(s->clone, (s->n + 1) * sizeof(*clone));
	if (!clone)
		return -ENOMEM;
	s->clone = clone;
	s->clone[s->n] = -1;
	s->path[s->n] = strdup(e->mount_point);
	if (!s->path[s->n])
		return -ENOMEM;
	s->n++;
	return 0;
}

/* Read from outside, where /proc/PID is the container's init: mount points
 * are relative to its root, as the container sees them. */
static int read_submounts(pid_t pid, struct submounts *s)
{
	char path[64];
	int r;

	snprintf(path, sizeof(path), "/proc/%d/mountinfo", (int)pid);
	r = mountinfo_each(path, note_mount, s);
	if (r)
		return attach_report(path, r);
	/* The binds below would show up in the peers of a shared parent: on
	 * the host, for a container whose root propagation is "shared". runc
	 * makes it rslave unless told otherwise. */
	if (s->parent_shared)
		return attach_report("the mount holding the directory is shared", -EINVAL);
	return 0;
}

static int clone_submounts(struct submounts *s)
{
	for (size_t i = 0; i < s->n; i++) {
		s->clone[i] = open_tree(AT_FDCWD, s->path[i], OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
		if (s->clone[i] < 0)
			return attach_report(s->path[i], -errno);
	}
	return 0;
}

/* A directory of our own: dir must not be a mount already (a second attach)
 * nor the root itself. */
static int make_dir(const char *dir)
{
	struct statx stx;

	if (mkdir(dir, 0555) && errno != EEXIST)
		return attach_report(dir, -errno);
	if (statx(AT_FDCWD, dir, AT_SYMLINK_NOFOLLOW, STATX_TYPE, &stx))
		return attach_report(dir, -errno);
	if (!S_ISDIR(stx.stx_mode))
		return attach_report(dir, -ENOTDIR);
	if (stx.stx_attributes_mask & stx.stx_attributes & STATX_ATTR_MOUNT_ROOT)
		return attach_report(dir, -EBUSY);
	return 0;
}

/* dir/path (path is absolute) in buf; -ENAMETOOLONG, reported. */
static int inside(char buf[PATH_MAX], const char *dir, const char *path)
{
	if (snprintf(buf, PATH_MAX, "%s%s", dir, path) >= PATH_MAX)
		return attach_report(path, -ENAMETOOLONG);
	return 0;
}

static int move_onto(int tree, const char *dir, const char *path)
{
	char target[PATH_MAX];
	int r = inside(target, dir, path);

	if (!r && move_mount(tree, "", AT_FDCWD, target, MOVE_MOUNT_F_EMPTY_PATH))
		r = attach_report(target, -errno);
	return r;
}

/* The bind's copy of the runtime's procfs and its submounts would stay under
 * the view, hidden: a second, useless copy of each in the mount table. */
static int drop_copied_proc(const char *dir)
{
	char proc[PATH_MAX];
	int r = inside(proc, dir, "/proc");

	if (!r && umount2(proc, MNT_DETACH | UMOUNT_NOFOLLOW) && errno != EINVAL)
		r = attach_report(proc, -errno);
	return r;
}

static int stack_view(int view, const struct submounts *s, const char *dir)
{
	int r;

	if (mount("/", dir, NULL, MS_BIND | MS_REC, NULL))
		return attach_report("bind of the container's root", -errno);
	if (mount(NULL, dir, NULL, MS_REC | MS_PRIVATE, NULL))
		r = attach_report("making it private", -errno);
	else
		r = drop_copied_proc(dir);
	if (!r)
		r = move_onto(view, dir, "/proc");
	for (size_t i = 0; !r && i < s->n; i++)
		r = move_onto(s->clone[i], dir, s->path[i]);
	if (r) /* all of it: the bind and what was moved onto it */
		umount2(dir, MNT_DETACH);
	return r;
}

/* Absolute, not the root, not below /proc, no "." or ".." component (that
 * would defeat the test for /proc). */
static int valid_dir(const char *dir)
{
	const char *c = dir;

	if (dir[0] != '/' || !strcmp(dir, "/") || path_under(dir, "/proc"))
		return attach_report(dir, -EINVAL);
	while ((c = strchr(c, '/'))) {
		size_t n = strcspn(++c, "/");

		if ((n == 1 && c[0] == '.') || (n == 2 && !strncmp(c, "..", 2)))
			return attach_report(dir, -EINVAL);
	}
	return 0;
}

int root_view_attach(pid_t pid, int view, const char *dir)
{
	__do_free_submounts struct submounts s = { .dir = dir };
	int home, r;

	r = valid_dir(dir);
	if (!r)
		r = read_submounts(pid, &s);
	if (r)
		return r;
	home = mountns_enter(pid);
	if (home < 0)
		return attach_report("entering the mount namespace", home);
	r = clone_submounts(&s);
	if (!r)
		r = make_dir(dir);
	if (!r)
		r = stack_view(view, &s, dir);
	int back = mountns_leave(home);

	return r ? r : back ? attach_report("leaving the mount namespace", back) : 0;
}
