/* cpuinfo: the blocks of the CPUs the cgroup may use, renumbered from 0,
 * no more of them than its CFS quota allows (LXCFS proc_cpuinfo_read with
 * --enable-cfs). A block starts at its "processor\t: N" line. */
#include <stdlib.h>
#include <string.h>

#include "fs/resources/render.h"

/* N of a "processor\t: N" line, or -1. */
static int processor(const char *l)
{
	static const char key[] = "processor";
	const char *p = l + sizeof(key) - 1;

	if (strncmp(l, key, sizeof(key) - 1))
		return -1;
	p += strspn(p, " \t");
	if (*p++ != ':')
		return -1;
	p += strspn(p, " ");
	return *p >= '0' && *p <= '9' ? atoi(p) : -1;
}

int res_cpuinfo(const struct res_target *t, const struct cg_set *cg, const char *src, FILE *out)
{
	cpu_set_t set;
	int max, shown = 0, printing = 0, cpu, r;
	double exact;

	(void)t;
	if ((r = res_visible_cpus(cg, &set, &max, &exact)))
		return r;
	for (const char *l = src; l; l = line_next(l)) {
		if ((cpu = processor(l)) >= 0) {
			if (shown == max)
				break;
			printing = cpu < CPU_SETSIZE && CPU_ISSET(cpu, &set);
			if (printing)
				fprintf(out, "processor\t: %d\n", shown++);
			continue;
		}
		if (printing)
			res_copy_line(out, l);
	}
	return 1;
}
