/* The daemon's cgroup namespace root inside a mount above it (cgroup_ns_root.h). */
#include "fs/cgroup/cgroup_ns_root.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs/lib/cleanup.h"

#define MAX_VISITED 100000 /* directories looked at, at most: a node's cgroups are fewer */

/* How many "/.." mount_root is made of; -1 if anything else is in it. */
static int ups_of(const char *mount_root)
{
	int n = 0;

	for (const char *p = mount_root; *p; p += 3, n++)
		if (strncmp(p, "/..", 3) || (p[3] && p[3] != '/'))
			return -1;
	return n;
}

/* Whether the cgroup at dir/own holds this process. */
static int holds_us(int dir, const char *own)
{
	char path[4096], line[32], me[32];
	int found = 0;
	FILE *f;
	__do_close int fd = -1;

	if ((size_t)snprintf(path, sizeof(path), "%s/cgroup.procs", own[1] ? own + 1 : ".") >= sizeof(path))
		return 0;
	if ((fd = openat(dir, path, O_RDONLY | O_CLOEXEC)) < 0 || !(f = fdopen(fd, "r")))
		return 0;
	move_fd(&fd);
	snprintf(me, sizeof(me), "%d\n", (int)getpid());
	while (!found && fgets(line, sizeof(line), f))
		found = !strcmp(line, me);
	fclose(f);
	return found;
}

/* The directory depth levels below dir that holds us at own, or -ENOENT. */
static int search(int dir, int depth, const char *own, int *visited)
{
	DIR *d;
	struct dirent *e;
	int found = -ENOENT, fd;

	if (depth == 0)
		return holds_us(dir, own) ? openat(dir, ".", O_PATH | O_DIRECTORY | O_CLOEXEC) : -ENOENT;
	if ((fd = openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0 || !(d = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return -ENOENT;
	}
	while (found < 0 && (e = readdir(d)) && ++*visited < MAX_VISITED) {
		__do_close int child = -1;

		if (e->d_type != DT_DIR || e->d_name[0] == '.')
			continue;
		if ((child = openat(dirfd(d), e->d_name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) >= 0)
			found = search(child, depth - 1, own, visited);
	}
	closedir(d);
	return found;
}

int cgroup_ns_root_open(int mountfd, const char *mount_root, const char *own)
{
	int ups = ups_of(mount_root), visited = 0;

	if (ups <= 0 || own[0] != '/' || !cgroup_ns_path_valid(own) || strstr(own, ".."))
		return -ENOENT;
	return search(mountfd, ups, own, &visited);
}

int cgroup_ns_path_valid(const char *path)
{
	int named = 0;

	if (*path != '/')
		return 0;
	for (const char *p = path + 1; *p;) {
		size_t len = strcspn(p, "/");

		if (len == 0 || (len == 1 && p[0] == '.'))
			return 0;
		if (len == 2 && !strncmp(p, "..", 2)) {
			if (named)
				return 0;
		} else {
			named = 1;
		}
		p += len;
		if (*p == '/')
			p++;
	}
	return 1;
}
