/* The root listing, served from the TGID index instead of the source.
 *
 * The source's static entries (meminfo, sys, self, ...) are read once at
 * start; the processes come from the index in ascending pid order. Offsets
 * follow procfs's own layout: static entries keep theirs (< 256), a process
 * sits at TGID_OFFSET + tgid, so a listing resumed at any offset continues
 * with the next pid whatever started or exited meanwhile.
 */
#include "fs/request/root_dir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache/index/proc_events.h"
#include "cache/index/tgid_index.h"
#include "cache/nodes/node.h"
#include "fs/caller/source_op.h"
#include "fs/lib/cleanup.h"
#include "fs/lib/log.h"
#include "fs/lib/settings.h"
#include "fs/request/dir_reply.h"

#define TGID_OFFSET 258 /* fs/proc/base.c: FIRST_PROCESS_ENTRY + 2 */

struct static_entry {
	char name[256];
	unsigned char type;
	ino_t ino;
	off_t pos;   /* offset at which this entry is read */
	off_t next;  /* offset of the entry after it */
};

static struct static_entry *statics;
static size_t nstatics;

static int numeric(const char *s)
{
	return *s >= '0' && *s <= '9';
}

int root_dir_init(void)
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
			struct static_entry *more = realloc(statics, (cap = cap ? cap * 2 : 64) * sizeof(*more));

			if (!more) {
				closedir(d);
				return -ENOMEM;
			}
			statics = more;
		}
		struct static_entry *e = &statics[nstatics++];
		snprintf(e->name, sizeof(e->name), "%s", de->d_name);
		e->type = de->d_type;
		e->ino = de->d_ino;
		e->pos = pos;
		e->next = de->d_off;
		pos = de->d_off;
	}
	closedir(d);
	/* The last static entry leads to the first process, whichever it is. */
	if (nstatics && statics[nstatics - 1].next > TGID_OFFSET)
		statics[nstatics - 1].next = TGID_OFFSET;
	return 0;
}

/* The static entries in the source's order, which every server of one
 * procfs reads alike, numbered from the first id after the root's. */
uint64_t root_dir_fixed_id(const char *name)
{
	for (size_t i = 0; i < nstatics && NODE_ROOT_ID + 1 + i <= NODE_FIXED_MAX; i++)
		if (!strcmp(statics[i].name, name))
			return NODE_ROOT_ID + 1 + i;
	return 0;
}

const char *root_dir_fixed_name(uint64_t id)
{
	return id > NODE_ROOT_ID && id - NODE_ROOT_ID - 1 < nstatics ? statics[id - NODE_ROOT_ID - 1].name
								    : NULL;
}

void root_dir_destroy(void)
{
	free(statics);
	statics = NULL;
	nstatics = 0;
}

/* hidepid=invisible and =ptraceable hide the processes the caller may not
 * trace from the listing too: the source, asked as the caller, knows. */
static int visible(const char *name)
{
	struct stat st;

	return pf.hide_level < 2 || source_stat(name, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

void root_dir_fill(struct dir_reply *r, off_t off)
{
	char name[24];

	for (size_t i = 0; i < nstatics; i++)
		if (statics[i].pos >= off &&
		    !dir_reply_add(r, statics[i].name, statics[i].type, statics[i].ino,
				   statics[i].next))
			return;
	tgid_index_refresh();
	proc_events_sync();
	for (int64_t tgid = tgid_index_next(off > TGID_OFFSET ? (uint32_t)(off - TGID_OFFSET) : 0);
	     tgid >= 0; tgid = tgid_index_next((uint32_t)tgid + 1)) {
		snprintf(name, sizeof(name), "%lld", (long long)tgid);
		if (!visible(name))
			continue;
		if (!dir_reply_add(r, name, DT_DIR, (ino_t)tgid, TGID_OFFSET + tgid + 1))
			break;
	}
}
