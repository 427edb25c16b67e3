/* loadavg: the cgroup's own averages (fs/cgroup/cgroup_load.h), its running
 * and total task counts and highest tid, in the kernel's format. */
#include <inttypes.h>

#include "fs/cgroup/cgroup_load.h"
#include "fs/resources/render.h"

#define FSHIFT 11
#define FIXED_1 (1ULL << FSHIFT)
#define LOAD_INT(x) ((uint64_t)((x) >> FSHIFT))
#define LOAD_FRAC(x) LOAD_INT(((x) & (FIXED_1 - 1)) * 100)

int res_loadavg(const struct res_target *t, const struct cg_set *cg, const char *src, FILE *out)
{
	struct cg_load l;
	uint64_t a[3];
	int r;

	(void)src;
	(void)t;
	if ((r = cg_load_get(cg, &l)))
		return r;
	for (int i = 0; i < 3; i++)
		a[i] = l.avenrun[i] + FIXED_1 / 200; /* rounded to the hundredth */
	fprintf(out, "%" PRIu64 ".%02" PRIu64 " %" PRIu64 ".%02" PRIu64 " %" PRIu64 ".%02" PRIu64 " %u/%u %d\n",
		LOAD_INT(a[0]), LOAD_FRAC(a[0]), LOAD_INT(a[1]), LOAD_FRAC(a[1]), LOAD_INT(a[2]),
		LOAD_FRAC(a[2]), l.running, l.total, (int)l.last);
	return 1;
}
