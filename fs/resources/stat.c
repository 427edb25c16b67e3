/* stat: the CPUs the cgroup may use, renumbered from 0, with its own time
 * (LXCFS proc_stat_read and its --enable-cfs cpuview). Per CPU, user and
 * system are the cgroup's (v1 cpuacct), idle is the rest of that CPU's
 * time; nice, iowait, irq, softirq, steal and guest are 0. With a CFS quota
 * only as many CPUs as it allows are shown, and the time of the CPUs cut
 * off is added to those shown, in turn. Without per-CPU accounting (v2)
 * the host's lines of those CPUs stand. The "cpu" line is the sum of those
 * shown; the lines after the CPUs are the host's. The reader of the host's
 * init (a caller in the daemon's namespace, init mode on the host) gets
 * the host's file. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs/cgroup/cgroup_cpu.h"
#include "fs/resources/render.h"

#define STAT_CPUS 1024

struct cpu_line {
	int cpu;            /* the host's number */
	uint64_t v[10];     /* user nice system idle iowait irq softirq steal guest guest_nice */
};

struct cpus {
	struct cpu_line line[STAT_CPUS];
	int n;
};

/* A "cpuN ..." line into c; 0 when it is not one. */
static int parse_cpu(const char *l, struct cpu_line *c)
{
	if (strncmp(l, "cpu", 3) || l[3] < '0' || l[3] > '9')
		return 0;
	memset(c, 0, sizeof(*c));
	return sscanf(l, "cpu%d %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64
			 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64,
		      &c->cpu, &c->v[0], &c->v[1], &c->v[2], &c->v[3], &c->v[4], &c->v[5], &c->v[6],
		      &c->v[7], &c->v[8], &c->v[9]) >= 5;
}

/* The CPU lines the cgroup may use, at most max; the first line after them. */
static const char *take_cpus(const char *src, const cpu_set_t *set, int max, struct cpus *c)
{
	const char *l = line_next(src); /* past the "cpu " total */
	struct cpu_line line;

	for (c->n = 0; l && parse_cpu(l, &line); l = line_next(l))
		if (line.cpu < CPU_SETSIZE && CPU_ISSET(line.cpu, set) && c->n < max && c->n < STAT_CPUS)
			c->line[c->n++] = line;
	return l;
}

static uint64_t busy(const struct cpu_line *c)
{
	uint64_t sum = 0;

	for (int i = 0; i < 10; i++)
		sum += i == 3 ? 0 : c->v[i];
	return sum;
}

/* The cgroup's own time on the CPUs shown; idle is what else the CPU did
 * or idled, of the share of its time the quota gives (scale: a quota of
 * 1.5 CPUs shows 2 whose times are 3/4 of the host's, as LXCFS's cpuview
 * takes idle off for a partial CPU). Time of allowed CPUs beyond those
 * shown goes to them in turn. */
static void own_time(struct cpus *c, const struct cg_cpu_time *t, int ncpu, const cpu_set_t *set,
		     double scale)
{
	uint64_t add[STAT_CPUS][2] = { { 0 } };
	int k = 0;

	for (int cpu = 0; cpu < ncpu && c->n; cpu++) {
		int shown = 0;

		for (int i = 0; i < c->n; i++)
			shown |= c->line[i].cpu == cpu;
		if (!shown && CPU_ISSET(cpu, set)) {
			add[k % c->n][0] += t[cpu].user;
			add[k++ % c->n][1] += t[cpu].system;
		}
	}
	for (int i = 0; i < c->n; i++) {
		struct cpu_line *l = &c->line[i];
		const struct cg_cpu_time *own = l->cpu < ncpu ? &t[l->cpu] : &(struct cg_cpu_time){ 0, 0 };
		uint64_t total = (uint64_t)((double)(busy(l) + l->v[3]) * scale), user = own->user + add[i][0],
			 sys = own->system + add[i][1];

		memset(l->v, 0, sizeof(l->v));
		l->v[0] = user;
		l->v[2] = sys;
		l->v[3] = total > user + sys ? total - user - sys : 0;
	}
}

static void print_line(FILE *out, const char *name, const uint64_t *v)
{
	fprintf(out, "%s %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64
		     " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 "\n",
		name, v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9]);
}

static void print(FILE *out, const struct cpus *c, const char *rest)
{
	uint64_t sum[10] = { 0 };
	char name[16];

	for (int i = 0; i < c->n; i++)
		for (int j = 0; j < 10; j++)
			sum[j] += c->line[i].v[j];
	print_line(out, "cpu ", sum);
	for (int i = 0; i < c->n; i++) {
		snprintf(name, sizeof(name), "cpu%d", i);
		print_line(out, name, c->line[i].v);
	}
	if (rest)
		fputs(rest, out);
}

/* What one text needs, some 100 KiB: from the heap, not in every worker
 * thread's TLS (libfuse starts and ends workers as the load goes). */
struct stat_work {
	struct cpus c;
	struct cg_cpu_time times[STAT_CPUS];
};

int res_stat(const struct res_target *t, const struct cg_set *cg, const char *src, FILE *out)
{
	struct stat_work *w;
	cpu_set_t set;
	const char *rest;
	double exact;
	int max, r;

	if (t->cgroup == 1) /* the host's init: the host's file (LXCFS) */
		return 0;
	if ((r = res_visible_cpus(cg, &set, &max, &exact)))
		return r;
	if (!(w = malloc(sizeof(*w))))
		return -ENOMEM;
	rest = take_cpus(src, &set, max, &w->c);
	if (!exact || exact > w->c.n)
		exact = w->c.n;
	if (!cg_cpu_times(cg, w->times, STAT_CPUS))
		own_time(&w->c, w->times, STAT_CPUS, &set, w->c.n ? exact / w->c.n : 1);
	print(out, &w->c, rest);
	free(w);
	return 1;
}
