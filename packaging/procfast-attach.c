/* procfast-attach: puts a copy of a mount (procfast's) inside the mount
 * namespace of a running process, a container's, and takes it away again.
 *
 *   procfast-attach PID SOURCE TARGET         a copy of SOURCE at TARGET
 *   procfast-attach --root PID SOURCE DIR     DIR: the container's root with
 *                                             SOURCE over DIR/proc
 *   procfast-attach --detach VIEW             unmount VIEW, end its connection
 *
 * A bind mount cannot cross mount namespaces: a detached copy made with
 * open_tree() can be attached in another one with move_mount() (Linux 5.2+).
 * The first form is for runtimes that never look at the container's /proc
 * once it runs; runc does, so the OCI hook uses --root (attach/root_view.c
 * says why) and --detach (attach/detach.c). Needs root.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

#include "fs/lib/cleanup.h"
#include "packaging/attach/detach.h"
#include "packaging/attach/mountns.h"
#include "packaging/attach/report.h"
#include "packaging/attach/root_view.h"

static int usage(const char *argv0)
{
	fprintf(stderr,
		"usage: %s PID SOURCE TARGET\n"
		"       %s --root PID SOURCE DIR\n"
		"       %s --detach VIEW\n"
		"Mounts a copy of SOURCE at TARGET in the mount namespace of PID; with --root,\n"
		"makes DIR there the root of PID's namespace with SOURCE over DIR/proc and\n"
		"PID's own mounts below /proc on top. --detach unmounts VIEW and ends its\n"
		"connection if a copy of it lives on in another namespace.\n",
		argv0, argv0, argv0);
	return 2;
}

/* A process id as the kernel gives them: positive, decimal. */
static pid_t parse_pid(const char *s)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	return errno || end == s || *end || v <= 0 || v > INT_MAX ? -1 : (pid_t)v;
}

/* The plain form: TARGET resolves as the container sees its tree. */
static int attach_at(pid_t pid, int tree, const char *target)
{
	int home = mountns_enter(pid), r = 0;

	if (home < 0)
		return attach_report("entering the mount namespace", home);
	if (move_mount(tree, "", AT_FDCWD, target, MOVE_MOUNT_F_EMPTY_PATH))
		r = attach_report(target, -errno);
	int back = mountns_leave(home);

	return r ? r : back ? attach_report("leaving the mount namespace", back) : 0;
}

int main(int argc, char *argv[])
{
	int root = argc > 1 && !strcmp(argv[1], "--root");
	char **arg = argv + 1 + root;
	pid_t pid;

	if (argc == 3 && !strcmp(argv[1], "--detach"))
		return detach_view(argv[2]) ? 1 : 0;
	if (argc != 4 + root)
		return usage(argv[0]);
	pid = parse_pid(arg[0]);
	if (pid < 0) {
		fprintf(stderr, "procfast-attach: not a process id: %s\n", arg[0]);
		return 2;
	}
	/* the source resolves here, in our own namespace */
	__do_close int tree = open_tree(AT_FDCWD, arg[1], OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);

	if (tree < 0)
		return attach_report(arg[1], -errno), 1;
	if (root)
		return root_view_attach(pid, tree, arg[2]) ? 1 : 0;
	return attach_at(pid, tree, arg[2]) ? 1 : 0;
}
