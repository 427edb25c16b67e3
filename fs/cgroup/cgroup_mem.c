#include "fs/cgroup/cgroup_mem.h"

#include <errno.h>
#include <string.h>

#include "fs/cgroup/cgroup_fs.h"
#include "fs/cgroup/cgroup_read.h"

/* File names per version: [v1, v2]. */
struct names {
	const char *limit[2], *usage[2], *swap_limit[2], *swap_usage[2];
};
/* (v1's limits come from memory.stat: [0] names what it summarises) */

static const struct names files = {
	{ "memory.limit_in_bytes", "memory.max" },
	{ "memory.usage_in_bytes", "memory.current" },
	{ "memory.memsw.limit_in_bytes", "memory.swap.max" },
	{ "memory.memsw.usage_in_bytes", "memory.swap.current" },
};

/* memory.stat's keys per version, and where each goes. */
struct stat_key {
	const char *name[2];
	size_t offset;
};

#define KEY(v1, v2, field) { { v1, v2 }, offsetof(struct cg_memory, field) }
static const struct stat_key stat_keys[] = {
	/* v1 says the binding limits itself (the smallest up the tree) */
	KEY("hierarchical_memory_limit", NULL, limit),
	KEY("hierarchical_memsw_limit", NULL, swap_limit),
	KEY("total_cache", "file", cache),
	KEY("total_shmem", "shmem", shmem),
	KEY("total_mapped_file", "file_mapped", mapped),
	KEY("total_dirty", "file_dirty", dirty),
	KEY("total_writeback", "file_writeback", writeback),
	KEY("total_rss_huge", "anon_thp", anon_huge),
	KEY("total_active_anon", "active_anon", active_anon),
	KEY("total_inactive_anon", "inactive_anon", inactive_anon),
	KEY("total_active_file", "active_file", active_file),
	KEY("total_inactive_file", "inactive_file", inactive_file),
	KEY("total_unevictable", "unevictable", unevictable),
};
#undef KEY

static int read_stat(const struct cg_path *p, struct cg_memory *m)
{
	char text[8192];
	ssize_t r = cg_read(p, "memory.stat", text, sizeof(text));

	struct cg_key keys[sizeof(stat_keys) / sizeof(stat_keys[0])];

	if (r < 0)
		return (int)r;
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		keys[i] = (struct cg_key){ stat_keys[i].name[p->v2],
					   (uint64_t *)((char *)m + stat_keys[i].offset) };
	cg_keys_u64(text, keys, sizeof(keys) / sizeof(keys[0])); /* m was zeroed */
	return 0;
}

/* Swap alone, from v1's memory+swap or v2's swap files; off without them.
 * v1's memory+swap limit came with memory.stat. */
static void read_swap(const struct cg_path *p, struct cg_memory *m)
{
	int v = p->v2;

	m->has_swap = (!v ? m->swap_limit != 0 : !cg_min_up(p, files.swap_limit[v], &m->swap_limit)) &&
		      !cg_read_u64(p, files.swap_usage[v], &m->swap_usage);
	if (!m->has_swap || v)
		return;
	/* v1 bounds memory + swap: what the memory limit leaves is swap's */
	if (m->swap_limit != CG_UNLIMITED && m->limit != CG_UNLIMITED)
		m->swap_limit = m->swap_limit > m->limit ? m->swap_limit - m->limit : 0;
	m->swap_usage = m->swap_usage > m->usage ? m->swap_usage - m->usage : 0;
}

int cg_memory_read(const struct cg_set *set, int want_swap, struct cg_memory *m)
{
	struct cg_path p;
	int r;

	memset(m, 0, sizeof(*m));
	if ((r = cgroup_in(set, CG_MEMORY, &p)) || (r = read_stat(&p, m)) ||
	    (p.v2 && (r = cg_min_up(&p, files.limit[1], &m->limit))) ||
	    (r = cg_read_u64(&p, files.usage[p.v2], &m->usage)))
		return r;
	if (!p.v2 && !m->limit)
		m->limit = CG_UNLIMITED; /* no hierarchical_memory_limit line */
	if (want_swap)
		read_swap(&p, m);
	return 0;
}
