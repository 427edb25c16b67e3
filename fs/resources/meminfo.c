/* meminfo and swaps from the memory cgroup (LXCFS proc_meminfo_read,
 * proc_swaps_read): MemTotal is the binding limit (never above the
 * host's), MemFree what the usage leaves of it, MemAvailable that plus the
 * page cache; the page lists, Cached, Shmem, Mapped, Dirty, Writeback and
 * AnonHugePages are the cgroup's memory.stat; Slab, Buffers and SwapCached
 * are not counted per cgroup and show 0; swap is the cgroup's swap limit
 * (never above the host's swap) and usage, 0 without swap accounting.
 * Every other line is the host's. */
#include <inttypes.h>
#include <string.h>
#include <sys/sysinfo.h>

#include "fs/cgroup/cgroup_mem.h"
#include "fs/cgroup/cgroup_read.h"
#include "fs/resources/render.h"

struct shown {
	const char *key;
	size_t len;
	uint64_t kb;
};
#define SHOWN(key, kb) { key, sizeof(key) - 1, kb }

static uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

static uint64_t less(uint64_t a, uint64_t b)
{
	return a > b ? a - b : 0;
}

/* Swap in kB as the container sees it: [0] total, [1] used. */
static void swap_kb(const struct cg_memory *m, uint64_t host_total_kb, uint64_t kb[2])
{
	kb[0] = kb[1] = 0;
	if (!m->has_swap)
		return;
	kb[0] = min_u64(m->swap_limit == CG_UNLIMITED ? UINT64_MAX : m->swap_limit / 1024,
			host_total_kb);
	kb[1] = min_u64(m->swap_usage / 1024, kb[0]);
}

static int fill(const struct cg_memory *m, const char *src, struct shown *s, size_t n)
{
	uint64_t host = res_meminfo_kb(src, "MemTotal:"), total, usage = m->usage / 1024, swap[2];

	total = m->limit == CG_UNLIMITED ? host : min_u64(m->limit / 1024, host);
	swap_kb(m, res_meminfo_kb(src, "SwapTotal:"), swap);
	const struct shown all[] = {
		SHOWN("MemTotal:", total),
		SHOWN("MemFree:", less(total, usage)),
		SHOWN("MemAvailable:", less(total, usage) + m->cache / 1024),
		SHOWN("Buffers:", 0),
		SHOWN("Cached:", m->cache / 1024),
		SHOWN("SwapCached:", 0),
		SHOWN("Active:", (m->active_anon + m->active_file) / 1024),
		SHOWN("Inactive:", (m->inactive_anon + m->inactive_file) / 1024),
		SHOWN("Active(anon):", m->active_anon / 1024),
		SHOWN("Inactive(anon):", m->inactive_anon / 1024),
		SHOWN("Active(file):", m->active_file / 1024),
		SHOWN("Inactive(file):", m->inactive_file / 1024),
		SHOWN("Unevictable:", m->unevictable / 1024),
		SHOWN("SwapTotal:", swap[0]),
		SHOWN("SwapFree:", swap[0] - swap[1]),
		SHOWN("Dirty:", m->dirty / 1024),
		SHOWN("Writeback:", m->writeback / 1024),
		SHOWN("AnonPages:", less(m->active_anon + m->inactive_anon, m->shmem) / 1024),
		SHOWN("Mapped:", m->mapped / 1024),
		SHOWN("Shmem:", m->shmem / 1024),
		SHOWN("Slab:", 0),
		SHOWN("SReclaimable:", 0),
		SHOWN("SUnreclaim:", 0),
		SHOWN("AnonHugePages:", m->anon_huge / 1024),
		SHOWN("ShmemHugePages:", 0),
		SHOWN("ShmemPmdMapped:", 0),
	};

	if (n < sizeof(all) / sizeof(all[0]))
		return -1;
	memcpy(s, all, sizeof(all));
	return (int)(sizeof(all) / sizeof(all[0]));
}

/* The line's key ("Name:") among s: lengths first, as most differ. */
static const struct shown *find(const struct shown *s, int n, const char *line)
{
	const char *colon = strchr(line, ':');
	size_t len = colon ? (size_t)(colon - line) + 1 : 0;

	for (int i = 0; i < n; i++)
		if (s[i].len == len && !memcmp(line, s[i].key, len))
			return &s[i];
	return NULL;
}

/* "Key:" padded to 16 columns, the value in 8 or more, " kB": the kernel's
 * show_val_kb, without printf's cost for each of some thirty lines. */
static void put_kb(FILE *out, const struct shown *v)
{
	char line[64], digits[24];
	size_t n = 0, d = 0;
	uint64_t kb = v->kb;

	do
		digits[d++] = (char)('0' + kb % 10);
	while ((kb /= 10) && d < sizeof(digits));
	memcpy(line, v->key, v->len);
	n = v->len;
	while (n < 16 || n + d < 24)
		line[n++] = ' ';
	while (d)
		line[n++] = digits[--d];
	memcpy(line + n, " kB\n", 4);
	fwrite(line, 1, n + 4, out);
}

int res_meminfo(const struct res_target *t, const struct cg_set *cg, const char *src, FILE *out)
{
	struct cg_memory m;
	struct shown s[32];
	int r, n;

	(void)t;
	if ((r = cg_memory_read(cg, res_meminfo_kb(src, "SwapTotal:") > 0, &m)))
		return r;
	n = fill(&m, src, s, sizeof(s) / sizeof(s[0]));
	for (const char *l = src; l; l = line_next(l)) {
		const struct shown *v = find(s, n, l);

		if (v)
			put_kb(out, v);
		else
			res_copy_line(out, l);
	}
	return 1;
}

/* The host's swap, for a cgroup without swap accounting. */
static void host_swap_kb(uint64_t kb[2])
{
	struct sysinfo si;

	kb[0] = kb[1] = 0;
	if (sysinfo(&si))
		return;
	kb[0] = (uint64_t)si.totalswap * si.mem_unit / 1024;
	kb[1] = less(kb[0], (uint64_t)si.freeswap * si.mem_unit / 1024);
}

int res_swaps(const struct res_target *t, const struct cg_set *cg, const char *src, FILE *out)
{
	struct cg_memory m;
	uint64_t kb[2];
	int r;

	(void)src;
	(void)t;
	host_swap_kb(kb);
	if ((r = cg_memory_read(cg, kb[0] > 0, &m)))
		return r;
	if (m.has_swap)
		swap_kb(&m, kb[0], kb);
	/* LXCFS's columns */
	fputs("Filename\t\t\t\tType\t\tSize\tUsed\tPriority\n", out);
	if (kb[0])
		fprintf(out, "%-40s%s\t\t%" PRIu64 "\t%" PRIu64 "\t0\n", "none", "virtual", kb[0], kb[1]);
	return 1;
}
