/* The names beside the pids at the root (root_names.h). */
#include "fs/request/root_names.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache/nodes/node.h"
#include "fs/lib/cleanup.h"
#include "fs/lib/settings.h"

static struct root_name *statics;
static size_t nstatics;

static int numeric(const char *s)
{
	return *s >= '0' && *s <= '9';
}

int root_names_init(void)
{
	__do_close int fd = openat(pf.srcfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	off_t pos = 0;
	size_t cap = 0;
	DIR *d;
	struct dirent *de;

	if (fd < 0 || !(d = fdopendir(fd)))
		return -errno;
	move_fd(&fd);
	while ((de = readdir(d))) {
		if (numeric(de->d_name)) {
			pos = de->d_off;
			continue;
		}
		if (nstatics == cap) {
			struct root_name *more = realloc(statics, (cap = cap ? cap * 2 : 64) * sizeof(*more));

			if (!more) {
				closedir(d);
				return -ENOMEM;
			}
			statics = more;
		}
		struct root_name *e = &statics[nstatics++];
		snprintf(e->name, sizeof(e->name), "%s", de->d_name);
		e->type = de->d_type;
		e->ino = de->d_ino;
		e->pos = pos;
		e->next = de->d_off;
		pos = de->d_off;
	}
	closedir(d);
	/* The last static entry leads to the first process, whichever it is. */
	if (nstatics && statics[nstatics - 1].next > ROOT_NAMES_TGID_OFFSET)
		statics[nstatics - 1].next = ROOT_NAMES_TGID_OFFSET;
	return 0;
}

/* The static entries in the source's order, which every server of one
 * procfs reads alike, numbered from the first id after the root's. */
uint64_t root_names_fixed_id(const char *name)
{
	for (size_t i = 0; i < nstatics && NODE_ROOT_ID + 1 + i <= NODE_FIXED_MAX; i++)
		if (!strcmp(statics[i].name, name))
			return NODE_ROOT_ID + 1 + i;
	return 0;
}

const char *root_names_fixed_name(uint64_t id)
{
	return id > NODE_ROOT_ID && id - NODE_ROOT_ID - 1 < nstatics ? statics[id - NODE_ROOT_ID - 1].name
								    : NULL;
}

void root_names_destroy(void)
{
	free(statics);
	statics = NULL;
	nstatics = 0;
}

const struct root_name *root_names(size_t *count)
{
	*count = nstatics;
	return statics;
}
