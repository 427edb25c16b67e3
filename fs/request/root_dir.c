/* The root listing, served from the TGID index instead of the source.
 *
 * The names beside the pids come from root_names.c; the processes from the
 * index in ascending pid order. Offsets follow procfs's own layout: the
 * names keep theirs (< 256), a process sits at TGID_OFFSET + tgid, so a
 * listing resumed at any offset continues with the next pid whatever
 * started or exited meanwhile.
 */
#include "fs/request/root_dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cache/index/proc_events.h"
#include "cache/index/tgid_index.h"
#include "fs/caller/source_op.h"
#include "fs/lib/settings.h"
#include "fs/request/dir_reply.h"
#include "fs/request/root_names.h"

#define TGID_OFFSET ROOT_NAMES_TGID_OFFSET

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

	size_t n;
	const struct root_name *names = root_names(&n);

	for (size_t i = 0; i < n; i++)
		if (names[i].pos >= off &&
		    !dir_reply_add(r, names[i].name, names[i].type, names[i].ino, names[i].next))
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
