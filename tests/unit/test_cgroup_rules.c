/* fs/cgroup/ and fs/resources/: the rules LXCFS-style files are made by,
 * on scratch trees (cgroup_fs_init's root, as -o cgroup_root= gives it) and
 * a scratch "proc" holding only PID/cgroup files. Every number expected is
 * worked out here from the files written, in MiB and kB. The v1 tree runs
 * in a child: cgroup_fs keeps one set of hierarchies per process. */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysinfo.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fs/cgroup/cgroup_cpu.h"
#include "fs/cgroup/cgroup_fs.h"
#include "fs/cgroup/cgroup_mem.h"
#include "fs/cgroup/cgroup_read.h"
#include "fs/resources/render.h"

#define MIB (1024ULL * 1024)

static char top[] = "/tmp/procfast-unit-cgrules-XXXXXX";

/* Writes text to top/rel (its directories made). */
static void put(const char *rel, const char *text)
{
	char path[1024];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", top, rel);
	for (char *s = strchr(path + strlen(top) + 1, '/'); s; s = strchr(s + 1, '/')) {
		*s = '\0';
		assert(mkdir(path, 0755) == 0 || errno == EEXIST);
		*s = '/';
	}
	assert((f = fopen(path, "w")) && fputs(text, f) >= 0 && fclose(f) == 0);
}

/* The cgroups of pid, from scratch proc's PID/cgroup, with the tree at tree. */
static void set_of(const char *tree, pid_t pid, struct cg_set *set)
{
	char path[1024];
	int proc;

	snprintf(path, sizeof(path), "%s/proc", top);
	assert((proc = open(path, O_PATH | O_DIRECTORY)) >= 0);
	snprintf(path, sizeof(path), "%s/%s", top, tree);
	assert(cgroup_fs_init(path, proc) == 0 && cgroup_fs_available());
	assert(cgroup_set(pid, set) == 0);
	assert(cgroup_set(pid + 1, set) == -ENOENT); /* no such task */
	assert(cgroup_set(pid, set) == 0);
}

static void key_tables(void)
{
	const char *stat = "anon 1000\nfile 2000\nfile_mapped 300\nfile_dirty 4\nshmem max\n"
			   "hierarchical_memory_limit 9223372036854771712\nlast 7";
	uint64_t v = 0, file = 1, mapped = 1, dirty = 1, absent = 42;

	assert(cg_key_u64(stat, "anon", &v) == 0 && v == 1000);         /* the first line */
	assert(cg_key_u64(stat, "file", &v) == 0 && v == 2000);         /* not file_mapped */
	assert(cg_key_u64(stat, "file_dirty", &v) == 0 && v == 4);
	assert(cg_key_u64(stat, "last", &v) == 0 && v == 7);            /* no newline */
	assert(cg_key_u64(stat, "shmem", &v) == 0 && v == CG_UNLIMITED); /* "max" */
	/* v1 writes "no limit" as the largest page-aligned long */
	assert(cg_key_u64(stat, "hierarchical_memory_limit", &v) == 0 && v == CG_UNLIMITED);
	assert(cg_key_u64(stat, "fil", &v) == -ENOENT && cg_key_u64(stat, "anon 1000", &v) == -ENOENT);
	assert(cg_key_u64("", "anon", &v) == -ENOENT);

	const struct cg_key keys[] = { { "file_mapped", &mapped }, { NULL, &v },
				       { "file", &file }, { "file_dirty", &dirty }, { "absent", &absent } };
	cg_keys_u64(stat, keys, sizeof(keys) / sizeof(keys[0]));
	assert(file == 2000 && mapped == 300 && dirty == 4);
	assert(absent == 42); /* a key not there keeps its value */
}

/* v2: root / parent / leaf, the reader in leaf. */
static void v2_tree(void)
{
	put("v2/cgroup.controllers", "cpuset cpu io memory pids\n");
	put("v2/parent/memory.max", "1073741824\n");          /* 1024 MiB */
	put("v2/parent/leaf/memory.max", "max\n");
	put("v2/parent/leaf/memory.current", "104857600\n");  /* 100 MiB */
	put("v2/parent/leaf/memory.stat", "anon 52428800\nfile 20971520\nfile_mapped 3145728\n"
		"shmem 1048576\nactive_anon 41943040\ninactive_anon 10485760\nactive_file 16777216\n"
		"inactive_file 4194304\nunevictable 0\nfile_dirty 8192\nanon_thp 2097152\n");
	put("v2/parent/memory.swap.max", "268435456\n");      /* 256 MiB */
	put("v2/parent/leaf/memory.swap.max", "max\n");
	put("v2/parent/leaf/memory.swap.current", "1048576\n");
	put("v2/parent/leaf/cpuset.cpus.effective", "0-1\n");
	put("v2/parent/leaf/cpu.max", "150000 100000\n");
	put("proc/4242/cgroup", "0::/parent/leaf\n");
}

static void min_up(const struct cg_set *set)
{
	struct cg_path p;
	uint64_t v;

	assert(cgroup_in(set, CG_MEMORY, &p) == 0 && p.v2 && !strcmp(p.rel, "parent/leaf"));
	/* the leaf unlimited, the parent binds; the root has no file */
	assert(cg_min_up(&p, "memory.max", &v) == 0 && v == 1024 * MIB);
	put("v2/parent/leaf/memory.max", "536870912\n");
	assert(cg_min_up(&p, "memory.max", &v) == 0 && v == 512 * MIB); /* the leaf's, smaller */
	put("v2/parent/leaf/memory.max", "max\n");
	put("v2/memory.max", "2147483648\n"); /* a larger one above: not binding */
	assert(cg_min_up(&p, "memory.max", &v) == 0 && v == 1024 * MIB);
	put("v2/memory.max", "268435456\n");
	assert(cg_min_up(&p, "memory.max", &v) == 0 && v == 256 * MIB);
	assert(unlink("v2/memory.max") == 0); /* cwd: top */
	snprintf(p.rel, sizeof(p.rel), "parent");
	assert(cgroup_parent(&p) == 0 && cgroup_is_root(&p) && cgroup_parent(&p) == -1);
	snprintf(p.rel, sizeof(p.rel), "parent/leaf");
	assert(cg_min_up(&p, "memory.nothing", &v) == -ENOENT); /* its own file is needed */
}

/* ceil(quota/period) CPUs, never more than the host has; exact quota/period. */
static void quota(const struct cg_set *set, const char *cpu_max, int cpus, double exact)
{
	int n = get_nprocs(), got = -1;
	double e = -1;

	put("v2/parent/leaf/cpu.max", cpu_max);
	assert(cg_cpu_quota(set, &got, &e) == 0);
	assert(got == (cpus < n ? cpus : n) && e == (exact < n ? exact : n));
}

static void cpu_rules(const struct cg_set *set)
{
	struct cg_set no_cpuset = *set;
	cpu_set_t cpus;
	int max, got;
	double exact;

	quota(set, "max 100000\n", 0, 0);
	quota(set, "150000 100000\n", 2, 1.5);
	quota(set, "50000 100000\n", 1, 0.5);
	quota(set, "200000 100000\n", 2, 2.0); /* a whole number is not rounded up */
	quota(set, "25000 50000\n", 1, 0.5);
	quota(set, "400000 100000\n", 4, 4.0);
	put("v2/parent/leaf/cpu.max", "lots\n");
	assert(cg_cpu_quota(set, &got, &exact) == -EINVAL && got == 0 && exact == 0);

	/* the cpuset, cut by the quota (rounded up), the exact share kept */
	put("v2/parent/leaf/cpu.max", "150000 100000\n");
	assert(res_visible_cpus(set, &cpus, &max, &exact) == 0);
	assert(CPU_COUNT(&cpus) == 2 && CPU_ISSET(0, &cpus) && CPU_ISSET(1, &cpus));
	assert(max == 2 && exact == 1.5);
	put("v2/parent/leaf/cpuset.cpus.effective", "1\n"); /* one CPU: the quota's 2 cut to 1 */
	assert(res_visible_cpus(set, &cpus, &max, &exact) == 0 && max == 1 && exact == 1.5);
	put("v2/parent/leaf/cpu.max", "max 100000\n");
	put("v2/parent/leaf/cpuset.cpus.effective", "0-3,8\n"); /* no quota: the whole cpuset */
	assert(res_visible_cpus(set, &cpus, &max, &exact) == 0 && max == 5 && exact == 0);
	no_cpuset.found[CG_CPUSET] = 0; /* no cpuset controller: every CPU */
	assert(res_visible_cpus(&no_cpuset, &cpus, &max, &exact) == 0);
	assert(CPU_COUNT(&cpus) == CPU_SETSIZE && max == CPU_SETSIZE);
	put("v2/parent/leaf/cpuset.cpus.effective", "x\n");
	assert(res_visible_cpus(set, &cpus, &max, &exact) == -EINVAL);
	put("v2/parent/leaf/cpuset.cpus.effective", "0-1\n");
}

static void memory_v2(const struct cg_set *set)
{
	struct cg_memory m;

	assert(cg_memory_read(set, 1, &m) == 0);
	assert(m.limit == 1024 * MIB && m.usage == 100 * MIB);
	assert(m.cache == 20 * MIB && m.mapped == 3 * MIB && m.shmem == 1 * MIB && m.dirty == 8192);
	assert(m.active_anon == 40 * MIB && m.inactive_file == 4 * MIB && m.anon_huge == 2 * MIB);
	assert(m.has_swap && m.swap_limit == 256 * MIB && m.swap_usage == 1 * MIB);
	assert(cg_memory_read(set, 0, &m) == 0 && !m.has_swap && m.swap_limit == 0);
}

/* Host 8000000 kB, swap 1048576 kB. MemTotal 1048576 (the parent's 1024
 * MiB), MemFree 1048576 - 102400, MemAvailable that + 20480 cached,
 * AnonPages (40960 + 10240) - 1024 shmem, SwapTotal 262144 (256 MiB),
 * SwapFree 262144 - 1024; lines not counted per cgroup are the host's. */
static void meminfo(const struct cg_set *set)
{
	const char *host = "MemTotal:        8000000 kB\nMemFree:         7000000 kB\n"
			   "MemAvailable:    7500000 kB\nBuffers:          123456 kB\n"
			   "Cached:           500000 kB\nAnonPages:        300000 kB\n"
			   "SwapTotal:       1048576 kB\nSwapFree:        1048576 kB\n"
			   "Slab:              99999 kB\nHugePages_Total:       0\n";
	const char *want = "MemTotal:        1048576 kB\nMemFree:          946176 kB\n"
			   "MemAvailable:     966656 kB\nBuffers:               0 kB\n"
			   "Cached:            20480 kB\nAnonPages:         50176 kB\n"
			   "SwapTotal:        262144 kB\nSwapFree:         261120 kB\n"
			   "Slab:                  0 kB\nHugePages_Total:       0\n";
	struct res_target t = { 4242, 0 };
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	assert(f && res_meminfo(&t, set, host, f) == 1 && fclose(f) == 0);
	assert(!strcmp(out, want));
	free(out);
}

/* v1: memory+swap bounds both, so swap is what the memory limit leaves. */
static void v1_child(void)
{
	struct cg_set set;
	struct cg_memory m;
	cpu_set_t cpuset;
	int cpus;
	double exact;

	put("v1/memory/ctr/memory.stat", "cache 1\nhierarchical_memory_limit 536870912\n"
		"hierarchical_memsw_limit 805306368\ntotal_cache 10485760\ntotal_rss_huge 2097152\n");
	put("v1/memory/ctr/memory.usage_in_bytes", "104857600\n");
	put("v1/memory/ctr/memory.memsw.usage_in_bytes", "110100480\n");
	put("v1/cpu,cpuacct/ctr/cpu.cfs_quota_us", "150000\n");
	put("v1/cpu,cpuacct/ctr/cpu.cfs_period_us", "100000\n");
	put("v1/cpuset/ctr/cpuset.cpus", "0\n");
	put("proc/4343/cgroup", "12:memory:/ctr\n11:cpu,cpuacct:/ctr\n10:cpuset:/ctr\n");
	set_of("v1", 4343, &set);
	assert(set.found[CG_MEMORY] && set.found[CG_CPU] && set.found[CG_CPUACCT] && !set.of[CG_CPU].v2);
	assert(!set.found[CG_BLKIO]); /* no hierarchy for it */
	assert(cg_memory_read(&set, 1, &m) == 0);
	assert(m.limit == 512 * MIB && m.usage == 100 * MIB && m.cache == 10 * MIB && m.anon_huge == 2 * MIB);
	assert(m.has_swap && m.swap_limit == 256 * MIB && m.swap_usage == 5 * MIB);
	put("v1/memory/ctr/memory.stat", "hierarchical_memory_limit 9223372036854771712\n");
	assert(cg_memory_read(&set, 1, &m) == 0 && m.limit == CG_UNLIMITED && !m.has_swap);
	assert(cg_cpu_quota(&set, &cpus, &exact) == 0);
	assert(get_nprocs() < 2 ? cpus == 1 && exact == 1 : cpus == 2 && exact == 1.5);
	assert(cg_cpuset(&set, &cpuset) == 0 && CPU_COUNT(&cpuset) == 1 && CPU_ISSET(0, &cpuset));
	put("v1/cpu,cpuacct/ctr/cpu.cfs_quota_us", "-1\n");
	assert(cg_cpu_quota(&set, &cpus, &exact) == 0 && cpus == 0 && exact == 0);
	exit(0);
}

int main(void)
{
	struct cg_set set;
	char cmd[600];
	int status;
	pid_t child;

	assert(mkdtemp(top) && chdir(top) == 0);
	key_tables();
	if ((child = fork()) == 0)
		v1_child();
	assert(child > 0 && waitpid(child, &status, 0) == child);
	assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	v2_tree();
	set_of("v2", 4242, &set);
	min_up(&set);
	cpu_rules(&set);
	memory_v2(&set);
	meminfo(&set);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", top);
	return system(cmd);
}
