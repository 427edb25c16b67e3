#include "fs/cgroup/cgroup_load.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fs/cgroup/cgroup_fs.h"
#include "fs/lib/cleanup.h"
#include "fs/lib/log.h"

#define FSHIFT 11
#define FIXED_1 (1ULL << FSHIFT)
/* 1/exp(5 s/1 min), 1/exp(5 s/5 min), 1/exp(5 s/15 min) in fixed point */
static const uint64_t exp_factor[3] = { 1884, 2014, 2037 };
#define LOAD_DEPTH 3
#define LOAD_MAX 4096 /* cgroups followed at once */

struct followed {
	struct cg_path cg;
	struct cg_load load;
	time_t last_read;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;
static struct followed *table[LOAD_MAX];
static unsigned count;
static int proc_fd = -1;

static time_t now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec;
}

/* The kernel's calc_load, with LXCFS's rounding up while rising. */
static uint64_t calc_load(uint64_t load, uint64_t exp, uint64_t active)
{
	uint64_t next;

	active *= FIXED_1;
	next = load * exp + active * (FIXED_1 - exp);
	if (active >= load)
		next += FIXED_1 - 1;
	return next / FIXED_1;
}

/* The state of a task from its stat ("pid (comm) S ..."). */
static int running_state(int dirfd, const char *name)
{
	char buf[512];
	__do_close int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
	char *p;

	if (n <= 0)
		return 0;
	buf[n] = '\0';
	p = strrchr(buf, ')');
	return p && (p[2] == 'R' || p[2] == 'D');
}

/* Counts the threads of process pid. */
static void count_process(const char *pid, struct cg_load *l)
{
	char path[64];
	struct dirent *e;
	DIR *d;
	int fd;

	snprintf(path, sizeof(path), "%s/task", pid);
	if ((fd = openat(proc_fd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return;
	if (!(d = fdopendir(fd))) {
		close(fd);
		return;
	}
	while ((e = readdir(d))) {
		pid_t tid = (pid_t)atoi(e->d_name);
		char stat[sizeof(e->d_name) + 8];

		if (tid <= 0)
			continue;
		l->total++;
		if (tid > l->last)
			l->last = tid;
		snprintf(stat, sizeof(stat), "%s/stat", e->d_name);
		l->running += running_state(fd, stat);
	}
	closedir(d);
}

static void count_procs(int cgfd, const char *rel, struct cg_load *l)
{
	char path[PATH_MAX + 16], line[32];
	FILE *f;
	int fd;

	snprintf(path, sizeof(path), "%s/cgroup.procs", rel);
	if ((fd = openat(cgfd, path, O_RDONLY | O_CLOEXEC)) < 0)
		return;
	if (!(f = fdopen(fd, "r"))) {
		close(fd);
		return;
	}
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		count_process(line, l);
	}
	fclose(f);
}

/* The cgroup and its children down to depth levels, as LXCFS walks them. */
static void count_tree(int cgfd, const char *rel, int depth, struct cg_load *l)
{
	struct dirent *e;
	DIR *d;
	int fd;

	if (depth > 0 && (fd = openat(cgfd, rel, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0) {
		if (!(d = fdopendir(fd))) {
			close(fd);
		} else {
			while ((e = readdir(d))) {
				char sub[PATH_MAX + 256];

				if (e->d_type != DT_DIR || e->d_name[0] == '.')
					continue;
				snprintf(sub, sizeof(sub), "%s/%s", rel, e->d_name);
				count_tree(cgfd, sub, depth - 1, l);
			}
			closedir(d);
		}
	}
	count_procs(cgfd, rel, l);
}

/* One sample: the tasks now, into the averages. */
static void sample(struct followed *f)
{
	struct cg_load now = { { 0, 0, 0 }, 0, 0, 0 };

	count_tree(f->cg.dirfd, f->cg.rel, LOAD_DEPTH, &now);
	for (int i = 0; i < 3; i++)
		f->load.avenrun[i] = calc_load(f->load.avenrun[i], exp_factor[i], now.running);
	f->load.running = now.running;
	f->load.total = now.total;
	f->load.last = now.last;
}

/* Drops the cgroups nobody read lately, samples the others. Called with
 * the lock held; samples without it would race with readers of
 * f->load, so the (short) walk is made under it. */
static void sample_all(void)
{
	time_t t = now_s();

	for (unsigned i = 0; i < count;) {
		if (t - table[i]->last_read > LOAD_IDLE_S) {
			log_debug("loadavg: no longer following %s", table[i]->cg.rel);
			free(table[i]);
			table[i] = table[--count];
			continue;
		}
		sample(table[i++]);
	}
}

static void *sampler(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&lock);
	for (;;) {
		struct timespec until;

		while (!count)
			pthread_cond_wait(&wake, &lock);
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += LOAD_PERIOD_S;
		while (count && pthread_cond_timedwait(&wake, &lock, &until) != ETIMEDOUT)
			;
		sample_all();
	}
	return NULL;
}

static struct followed *find(const struct cg_path *cg)
{
	for (unsigned i = 0; i < count; i++)
		if (table[i]->cg.dirfd == cg->dirfd && !strcmp(table[i]->cg.rel, cg->rel))
			return table[i];
	return NULL;
}

/* Started before any worker: a thread takes its creator's credentials,
 * and a worker's are the caller's while it serves. */
int cg_load_init(int selfproc)
{
	pthread_t t;
	int r;

	proc_fd = selfproc;
	if ((r = pthread_create(&t, NULL, sampler, NULL)))
		return -r;
	pthread_setname_np(t, "pf-loadavg"); /* for ps -L, and the tests */
	pthread_detach(t);
	return 0;
}

/* A cgroup read for the first time: followed from now, sampled at once. */
static struct followed *follow(const struct cg_path *cg, int *err)
{
	struct followed *f;

	if (count == LOAD_MAX) {
		*err = -ENOSPC;
		return NULL;
	}
	if (!(f = calloc(1, sizeof(*f)))) {
		*err = -ENOMEM;
		return NULL;
	}
	f->cg = *cg;
	sample(f);
	table[count++] = f;
	pthread_cond_signal(&wake);
	log_debug("loadavg: following %s", cg->rel);
	return f;
}

int cg_load_get(const struct cg_set *set, struct cg_load *out)
{
	struct cg_path cg;
	char procs[PATH_MAX + 16];
	struct followed *f;
	int r = cgroup_in(set, CG_CPU, &cg);

	if (r)
		return r;
	/* as the caller: its fsuid decides (AT_EACCESS) */
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", cg.rel);
	if (faccessat(cg.dirfd, procs, R_OK, AT_EACCESS))
		return -errno;
	pthread_mutex_lock(&lock);
	if ((f = find(&cg)) || (f = follow(&cg, &r))) {
		f->last_read = now_s();
		*out = f->load;
	}
	pthread_mutex_unlock(&lock);
	return f ? 0 : r;
}

unsigned cg_load_followed(void)
{
	unsigned n;

	pthread_mutex_lock(&lock);
	n = count;
	pthread_mutex_unlock(&lock);
	return n;
}
