#include "cache/index/tgid_index.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cache/index/pid_view.h"
#include "cache/index/pidgen.h"
#include "fs/lib/cleanup.h"
#include "fs/lib/clock.h"
#include "fs/lib/hbitmap.h"
#include "fs/lib/log.h"
#include "fs/lib/proc_names.h"

static struct hbitmap leaders;   /* marked: probably a leader */
static struct hbitmap exited;    /* subset: its leader exited, check the source */
static int source_fd = -1;

static int fallback_mode;
static unsigned fallback_lifetime_ms;
static _Atomic uint64_t fallback_scanned_ns;
static pthread_mutex_t fallback_lock = PTHREAD_MUTEX_INITIALIZER;

void tgid_index_init(int srcfd)
{
	source_fd = srcfd;
}

void tgid_index_mark(pid_t tgid)
{
	if (tgid <= 0 || (uint32_t)tgid >= HBITMAP_BITS)
		return;
	hbitmap_clear(&exited, (uint32_t)tgid);
	hbitmap_set(&leaders, (uint32_t)tgid);
}

static void unmark(pid_t tgid)
{
	hbitmap_clear(&leaders, (uint32_t)tgid);
	hbitmap_clear(&exited, (uint32_t)tgid);
}

void tgid_index_exited(pid_t tgid)
{
	if (tgid > 0 && (uint32_t)tgid < HBITMAP_BITS && hbitmap_test(&leaders, (uint32_t)tgid))
		hbitmap_set(&exited, (uint32_t)tgid);
}

/* An exited leader's pid is listed while the source still has it as a
 * leader: a zombie, or a group whose other threads live on. The pid may
 * also have been reused meanwhile, by a thread (never listed) or by a new
 * leader (listed: its FORK event marks it anyway). */
static int source_has(uint32_t pid)
{
	return pidgen_is_leader((pid_t)pid);
}

static int pid_of(const char *name)
{
	pid_t v = name_pid(name);

	return (uint64_t)v < HBITMAP_BITS ? v : 0;
}

/* Reads the source root once: its pid names are exactly the listable leaders. */
static uint64_t *scan_source(void)
{
	uint64_t *seen = calloc(HBITMAP_L0, sizeof(uint64_t));
	__do_close int fd = openat(source_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d;
	struct dirent *de;

	if (!seen || fd < 0) {
		free(seen);
		return NULL;
	}
	d = fdopendir(fd);
	if (!d) {
		free(seen);
		return NULL;
	}
	move_fd(&fd);
	while ((de = readdir(d))) {
		int pid = pid_of(de->d_name);

		if (pid)
			seen[pid / 64] |= 1ULL << (pid % 64);
	}
	closedir(d);
	return seen;
}

int tgid_index_resync(void)
{
	uint64_t *seen = scan_source();
	int64_t p;

	if (!seen)
		return -ENOMEM;
	for (p = hbitmap_next(&leaders, 0); p >= 0; p = hbitmap_next(&leaders, (uint32_t)p + 1))
		if (!(seen[p / 64] >> (p % 64) & 1))
			unmark((pid_t)p);
	/* A leader that already exited (a zombie) gets no more events, and
	 * one seen exiting may have sent its EXIT event before the scan began, so
	 * that event is skipped (proc_events.c): the scan marks both exited,
	 * so that they are checked against the source when listed and swept
	 * once reaped (test_enobufs_during_storm_keeps_long_lived). */
	for (uint32_t w = 0; w < HBITMAP_L0; w++)
		for (uint64_t bits = seen[w]; bits; bits &= bits - 1) {
			pid_t pid = (pid_t)(w * 64 + (uint32_t)__builtin_ctzll(bits));

			tgid_index_mark(pid);
			pid_view_leader_seen(pid);
			if (pidgen_exited(pid) || pidgen_exiting(pid))
				tgid_index_exited(pid);
		}
	free(seen);
	return 0;
}

int64_t tgid_index_sweep(uint32_t from, unsigned max)
{
	int64_t p;

	for (p = hbitmap_next(&exited, from); p >= 0 && max--; p = hbitmap_next(&exited, (uint32_t)p + 1))
		if (!source_has((uint32_t)p))
			unmark((pid_t)p);
	return p;
}

int64_t tgid_index_next(uint32_t from)
{
	for (int64_t p = hbitmap_next(&leaders, from); p >= 0; p = hbitmap_next(&leaders, (uint32_t)p + 1))
		if (!hbitmap_test(&exited, (uint32_t)p) || source_has((uint32_t)p))
			return p;
	return -1;
}

int tgid_index_live_leader(pid_t pid)
{
	return pid > 0 && (uint32_t)pid < HBITMAP_BITS && !fallback_mode &&
	       hbitmap_test(&leaders, (uint32_t)pid) && !hbitmap_test(&exited, (uint32_t)pid);
}

void tgid_index_set_fallback(unsigned lifetime_ms)
{
	fallback_mode = 1;
	fallback_lifetime_ms = lifetime_ms;
}

void tgid_index_refresh(void)
{
	uint64_t lifetime = (uint64_t)fallback_lifetime_ms * 1000000ULL;

	if (!fallback_mode || now_ns() - atomic_load(&fallback_scanned_ns) < lifetime)
		return;
	pthread_mutex_lock(&fallback_lock);
	if (now_ns() - atomic_load(&fallback_scanned_ns) >= lifetime) {
		if (tgid_index_resync() == 0)
			atomic_store(&fallback_scanned_ns, now_ns());
	}
	pthread_mutex_unlock(&fallback_lock);
}
