/* fs/cgroup/cgroup_ns_root.c: our cgroup namespace's root inside a mount above it. */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs/cgroup/cgroup_ns_root.h"

static char top[] = "/tmp/procfast-unit-cgns-XXXXXX";

static void make(const char *rel, int holds_us)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", top, rel);
	assert(mkdir(path, 0755) == 0 || errno == EEXIST);
	snprintf(path, sizeof(path), "%s/%s/cgroup.procs", top, rel);
	assert((f = fopen(path, "w")));
	fprintf(f, "1\n%d\n", holds_us ? (int)getpid() : (int)getpid() + 1);
	fclose(f);
}

static int same_dir(int fd, const char *rel)
{
	char path[512];
	struct stat a, b;

	snprintf(path, sizeof(path), "%s/%s", top, rel);
	assert(fstat(fd, &a) == 0 && stat(path, &b) == 0);
	return a.st_ino == b.st_ino && a.st_dev == b.st_dev;
}

static void paths(void)
{
	assert(cgroup_ns_path_valid("/"));
	assert(cgroup_ns_path_valid("/a/b"));
	assert(cgroup_ns_path_valid("/../../pod/ctr"));
	assert(cgroup_ns_path_valid("/.."));
	assert(!cgroup_ns_path_valid("/a/../b")); /* never printed by the kernel */
	assert(!cgroup_ns_path_valid("/./a") && !cgroup_ns_path_valid("//a"));
	assert(!cgroup_ns_path_valid("a") && !cgroup_ns_path_valid(""));
}

static void roots(void)
{
	int mount, fd;

	assert(mkdtemp(top));
	make("", 0);
	make("kubepods", 0);
	make("kubepods/podA", 0);
	make("kubepods/podB", 0);
	make("kubepods/podA/ctr", 1); /* us, at our namespace's root */
	make("kubepods/podB/ctr", 0);
	assert((mount = open(top, O_PATH | O_DIRECTORY)) >= 0);

	fd = cgroup_ns_root_open(mount, "/../../..", "/");
	assert(fd >= 0 && same_dir(fd, "kubepods/podA/ctr"));
	close(fd);
	/* the mount not above us, or at another depth: not found */
	assert(cgroup_ns_root_open(mount, "/", "/") < 0);
	assert(cgroup_ns_root_open(mount, "/../x", "/") < 0);
	assert(cgroup_ns_root_open(mount, "/../..", "/") < 0);

	/* us in a child of our namespace's root */
	make("kubepods/podA/ctr/sub", 1);
	make("kubepods/podA/ctr", 0);
	fd = cgroup_ns_root_open(mount, "/../../..", "/sub");
	assert(fd >= 0 && same_dir(fd, "kubepods/podA/ctr"));
	close(fd);
	close(mount);
}

int main(void)
{
	char cmd[600];

	paths();
	roots();
	snprintf(cmd, sizeof(cmd), "rm -rf %s", top);
	return system(cmd);
}
