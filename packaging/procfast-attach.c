/* procfast-attach: puts a copy of a mount (procfast's) at a path inside the
 * mount namespace of a running process, e.g. over a container's /proc.
 *
 *   procfast-attach PID SOURCE TARGET
 *
 * A bind mount cannot cross mount namespaces, and runc refuses anything but
 * a procfs for /proc when it creates a container. A detached copy made with
 * open_tree() can be attached in another namespace with move_mount() (Linux
 * 5.2+): that is what this does, as root.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

static int fail(const char *what)
{
	fprintf(stderr, "procfast-attach: %s: %s\n", what, strerror(errno));
	return 1;
}

int main(int argc, char *argv[])
{
	char ns[64];
	int tree, nsfd, home;

	if (argc != 4) {
		fprintf(stderr, "usage: %s PID SOURCE TARGET\n"
				"Mounts a copy of SOURCE at TARGET in the mount namespace of PID.\n",
			argv[0]);
		return 2;
	}
	snprintf(ns, sizeof(ns), "/proc/%s/ns/mnt", argv[1]);
	tree = open_tree(AT_FDCWD, argv[2], OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
	if (tree < 0)
		return fail(argv[2]);
	nsfd = open(ns, O_RDONLY | O_CLOEXEC);
	if (nsfd < 0)
		return fail(ns);
	home = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
	if (home < 0)
		return fail("/proc/self/ns/mnt");
	if (setns(nsfd, CLONE_NEWNS))
		return fail("setns");
	/* setns() moved our root to the namespace's: TARGET resolves as the
	 * container sees its tree (after its pivot_root). */
	if (move_mount(tree, "", AT_FDCWD, argv[3], MOVE_MOUNT_F_EMPTY_PATH))
		return fail(argv[3]);
	/* Home again: what runs at exit (a sanitizer's checks) expects our /proc. */
	if (setns(home, CLONE_NEWNS))
		return fail("setns back");
	return 0;
}
