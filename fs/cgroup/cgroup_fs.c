#include "fs/cgroup/cgroup_fs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs/cgroup/cgroup_ns_root.h"
#include "fs/lib/cleanup.h"
#include "fs/lib/log.h"

/* The names each controller has in /proc/PID/cgroup and cgroup.controllers. */
static const char *const ctrl_names[CG_CTRLS] = { "memory", "cpu", "cpuacct", "cpuset", "blkio" };
/* v2 merges cpu and cpuacct into "cpu", blkio into "io". */
static const char *const v2_names[CG_CTRLS] = { "memory", "cpu", "cpu", "cpuset", "io" };

struct hierarchy {
	int fd;             /* -1: none */
	int v2;
	char root[PATH_MAX]; /* the mount's root within the hierarchy (mountinfo field 4) */
	int ns_root;        /* our cgroup namespace's root in the mount, when the mount
			     * reaches above it (cgroup_ns_root.h); else -1 */
};

static struct hierarchy by_ctrl[CG_CTRLS] = { { -1, 0, "", -1 }, { -1, 0, "", -1 }, { -1, 0, "", -1 },
					      { -1, 0, "", -1 }, { -1, 0, "", -1 } };
static int selfproc_fd = -1;

/* Whether word is one of the comma-separated items of list. */
static int in_list(const char *list, const char *word)
{
	size_t n = strlen(word);

	for (const char *p = list; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
		if (!strncmp(p, word, n) && (p[n] == ',' || p[n] == '\0' || p[n] == ' ' || p[n] == '\n'))
			return 1;
	return 0;
}

static void take(enum cg_ctrl c, const char *dir, const char *root, int v2)
{
	int fd;

	if (by_ctrl[c].fd >= 0 && !(by_ctrl[c].v2 && !v2)) /* v1 wins over v2 */
		return;
	if ((fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
		return;
	if (by_ctrl[c].fd >= 0)
		close(by_ctrl[c].fd);
	by_ctrl[c].fd = fd;
	by_ctrl[c].v2 = v2;
	snprintf(by_ctrl[c].root, sizeof(by_ctrl[c].root), "%s", root);
}

/* The unified hierarchy serves the controllers its root enables. */
static void take_v2(const char *dir, const char *root)
{
	char path[PATH_MAX + 32], list[512] = "";
	FILE *f;

	snprintf(path, sizeof(path), "%s/cgroup.controllers", dir);
	if (!(f = fopen(path, "re")))
		return;
	if (!fgets(list, sizeof(list), f))
		list[0] = '\0';
	fclose(f);
	for (int c = 0; c < CG_CTRLS; c++) {
		char words[sizeof(list)], *p = words;

		/* space-separated there; strsep cuts its copy */
		memcpy(words, list, sizeof(list));
		for (char *w; (w = strsep(&p, " \n"));)
			if (!strcmp(w, v2_names[c]))
				take((enum cg_ctrl)c, dir, root, 1);
	}
}

/* mountinfo: "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS ... - FSTYPE SOURCE SUPEROPTS" */
static void take_mount(char *line)
{
	char *f[5], *sep = strstr(line, " - "), *p = line;
	char fstype[32], src[64], super[512];

	for (int i = 0; i < 5; i++)
		if (!(f[i] = strsep(&p, " ")))
			return;
	if (!sep || sscanf(sep + 3, "%31s %63s %511s", fstype, src, super) != 3)
		return;
	if (!strcmp(fstype, "cgroup2"))
		return take_v2(f[4], f[3]);
	if (strcmp(fstype, "cgroup"))
		return;
	for (int c = 0; c < CG_CTRLS; c++)
		if (in_list(super, ctrl_names[c]))
			take((enum cg_ctrl)c, f[4], f[3], 0);
}

static int from_mountinfo(int selfproc)
{
	__do_close int fd = openat(selfproc, "self/mountinfo", O_RDONLY | O_CLOEXEC);
	__do_free char *line = NULL;
	size_t cap = 0;
	FILE *f;

	if (fd < 0 || !(f = fdopen(fd, "r")))
		return -errno;
	move_fd(&fd);
	while (getline(&line, &cap, f) > 0)
		take_mount(line);
	fclose(f);
	return 0;
}

/* A scratch tree: v2-shaped if it has cgroup.controllers, else one
 * directory per v1 controller (cpu and cpuacct may share "cpu,cpuacct"). */
static void from_tree(const char *root)
{
	char dir[PATH_MAX + 64];

	snprintf(dir, sizeof(dir), "%s/cgroup.controllers", root);
	if (!access(dir, F_OK))
		return take_v2(root, "/");
	for (int c = 0; c < CG_CTRLS; c++) {
		snprintf(dir, sizeof(dir), "%s/%s", root, ctrl_names[c]);
		take((enum cg_ctrl)c, dir, "/", 0);
	}
	snprintf(dir, sizeof(dir), "%s/cpu,cpuacct", root);
	take(CG_CPU, dir, "/", 0);
	take(CG_CPUACCT, dir, "/", 0);
}

static const char *line_path(char *line, enum cg_ctrl c);

/* Each mount that reaches above our cgroup namespace (its root "/.."): where
 * that namespace's root is in it, for the paths /proc/PID/cgroup gives. */
static void find_ns_roots(void)
{
	__do_close int fd = openat(selfproc_fd, "self/cgroup", O_RDONLY | O_CLOEXEC);
	char text[8192];
	ssize_t len = fd < 0 ? -1 : read(fd, text, sizeof(text) - 1);

	if (len < 0)
		return;
	text[len] = '\0';
	for (int c = 0; c < CG_CTRLS; c++) {
		struct hierarchy *h = &by_ctrl[c];

		if (h->fd < 0 || strncmp(h->root, "/..", 3))
			continue;
		for (char *l = text, *next; l && *l && h->ns_root < 0; l = next) {
			char copy[sizeof(text)];
			const char *own;

			next = strchr(l, '\n');
			memcpy(copy, l, next ? (size_t)(next - l) : strlen(l));
			copy[next ? (size_t)(next - l) : strlen(l)] = '\0';
			if (next)
				next++;
			if ((own = line_path(copy, (enum cg_ctrl)c)))
				h->ns_root = cgroup_ns_root_open(h->fd, h->root, own);
		}
		if (h->ns_root < 0)
			log_warn("cgroup %s: mounted from above our cgroup namespace (%s) and our place "
				 "in it not found: other containers' cgroups are not followed", ctrl_names[c], h->root);
		else
			log_info("cgroup %s: mounted from above our cgroup namespace: paths followed from its root",
				 ctrl_names[c]);
	}
}

int cgroup_fs_init(const char *root, int selfproc)
{
	int r = 0;

	selfproc_fd = selfproc;
	if (root)
		from_tree(root);
	else if (!(r = from_mountinfo(selfproc)))
		find_ns_roots();
	for (int c = 0; c < CG_CTRLS; c++)
		log_debug("cgroup %s: %s", ctrl_names[c],
			  by_ctrl[c].fd < 0 ? "none" : by_ctrl[c].v2 ? "v2" : "v1");
	if (r)
		log_warn("cgroups: cannot read mountinfo: %s", strerror(-r));
	return r;
}

int cgroup_fs_available(void)
{
	for (int c = 0; c < CG_CTRLS; c++)
		if (by_ctrl[c].fd >= 0)
			return 1;
	return 0;
}

/* The path of a /proc/PID/cgroup line "ID:CONTROLLERS:PATH" for c, or NULL. */
static const char *line_path(char *line, enum cg_ctrl c)
{
	char *id = strsep(&line, ":"), *ctrls = strsep(&line, ":");

	if (!id || !ctrls || !line)
		return NULL;
	if (by_ctrl[c].v2)
		return !strcmp(id, "0") && !*ctrls ? line : NULL;
	return in_list(ctrls, ctrl_names[c]) ? line : NULL;
}

/* Makes path, absolute in the hierarchy, relative to the mount's root; or,
 * where h follows our namespace's root, relative to that. */
static int relative(const char *path, const struct hierarchy *h, char *out, size_t size)
{
	const char *root = h->root;
	size_t n = strlen(root);

	if (h->ns_root >= 0) {
		if (!cgroup_ns_path_valid(path))
			return -ENOENT;
		return (size_t)snprintf(out, size, "%s", path[1] ? path + 1 : ".") >= size ? -ENAMETOOLONG : 0;
	}
	if (strcmp(root, "/")) {
		if (strncmp(path, root, n) || (path[n] && path[n] != '/'))
			return -ENOENT; /* outside what is mounted */
		path += n;
	}
	while (*path == '/')
		path++;
	if (strstr(path, "..") || (size_t)snprintf(out, size, "%s", *path ? path : ".") >= size)
		return -ENAMETOOLONG;
	return 0;
}

/* Fills set's entry for c from one line of /proc/PID/cgroup, if it is c's. */
static void take_line(const char *line, enum cg_ctrl c, struct cg_set *set)
{
	char copy[8192]; /* line_path cuts it; the next controller reads the line again */
	size_t len = strlen(line);
	const char *path;

	if (set->found[c] || by_ctrl[c].fd < 0 || len >= sizeof(copy))
		return;
	memcpy(copy, line, len + 1);
	if (!(path = line_path(copy, c)))
		return;
	set->of[c].dirfd = by_ctrl[c].ns_root >= 0 ? by_ctrl[c].ns_root : by_ctrl[c].fd;
	set->of[c].v2 = by_ctrl[c].v2;
	set->found[c] = !relative(path, &by_ctrl[c], set->of[c].rel, sizeof(set->of[c].rel));
}

int cgroup_set(pid_t task, struct cg_set *set)
{
	char name[32], text[8192];
	__do_close int fd = -1;
	ssize_t len;

	memset(set->found, 0, sizeof(set->found));
	if (task <= 0)
		return -ENOENT;
	snprintf(name, sizeof(name), "%d/cgroup", task);
	if ((fd = openat(selfproc_fd, name, O_RDONLY | O_CLOEXEC)) < 0)
		return -errno;
	if ((len = read(fd, text, sizeof(text) - 1)) < 0)
		return -errno;
	text[len] = '\0';
	for (char *l = text, *next; l && *l; l = next) {
		next = strchr(l, '\n');
		if (next)
			*next++ = '\0';
		for (int c = 0; c < CG_CTRLS; c++)
			take_line(l, (enum cg_ctrl)c, set);
	}
	return 0;
}

int cgroup_in(const struct cg_set *set, enum cg_ctrl ctrl, struct cg_path *out)
{
	if (!set->found[ctrl])
		return -ENOENT;
	*out = set->of[ctrl];
	return 0;
}

int cgroup_of(pid_t task, enum cg_ctrl ctrl, struct cg_path *out)
{
	struct cg_set set;
	int r = cgroup_set(task, &set);

	return r ? r : cgroup_in(&set, ctrl, out);
}

int cgroup_parent(struct cg_path *p)
{
	char *slash = strrchr(p->rel, '/');

	if (cgroup_is_root(p))
		return -1;
	if (slash)
		*slash = '\0';
	else
		strcpy(p->rel, ".");
	return 0;
}

int cgroup_is_root(const struct cg_path *p)
{
	return !strcmp(p->rel, ".");
}
