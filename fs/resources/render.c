#include "fs/resources/render.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "fs/cgroup/cgroup_cpu.h"

size_t res_line_len(const char *l)
{
	const char *nl = strchr(l, '\n');

	return nl ? (size_t)(nl - l) + 1 : strlen(l);
}

void res_copy_line(FILE *out, const char *l)
{
	fwrite(l, 1, res_line_len(l), out);
}

uint64_t res_meminfo_kb(const char *text, const char *key)
{
	size_t n = strlen(key);

	for (const char *l = text; l; l = line_next(l))
		if (!strncmp(l, key, n))
			return strtoull(l + n, NULL, 10);
	return 0;
}

int res_visible_cpus(const struct cg_set *cg, cpu_set_t *set, int *max_cpus, double *exact)
{
	int r, in_set;

	/* No cpuset controller (common on v2, where it is enabled per subtree):
	 * every CPU, which the quota may still cut. */
	if ((r = cg_cpuset(cg, set)) == -ENOENT)
		for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
			CPU_SET(cpu, set);
	else if (r)
		return r;
	in_set = CPU_COUNT(set);
	if (cg_cpu_quota(cg, max_cpus, exact))
		*max_cpus = 0, *exact = 0;
	if (!*max_cpus || *max_cpus > in_set)
		*max_cpus = in_set;
	return 0;
}
