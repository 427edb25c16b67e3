#include "fs/ops/reader_ns.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fs/log.h"

static const struct {
	const char *file; /* in /proc/TID/ns/ */
	int type;         /* setns's nstype */
} kinds[RNS_KINDS] = {
	[RNS_NET] = { "net", CLONE_NEWNET },
	[RNS_UTS] = { "uts", CLONE_NEWUTS },
	[RNS_IPC] = { "ipc", CLONE_NEWIPC },
	[RNS_CGROUP] = { "cgroup", CLONE_NEWCGROUP },
	[RNS_USER] = { "user", CLONE_NEWUSER },
	[RNS_TIME] = { "time", CLONE_NEWTIME },
	[RNS_PID] = { "pid", CLONE_NEWPID },
};

static int self_proc = -1;
static struct {
	unsigned long ino; /* 0: the kernel has no such namespace kind */
	int fd;            /* to come back to (enterable kinds) */
} daemons[RNS_KINDS];

int reader_ns_init(int selfproc)
{
	self_proc = selfproc;
	for (int k = 0; k < RNS_KINDS; k++) {
		char path[32];
		struct stat st;
		int fd;

		snprintf(path, sizeof(path), "self/ns/%s", kinds[k].file);
		fd = openat(selfproc, path, O_RDONLY | O_CLOEXEC);
		if (fd < 0 || fstat(fd, &st)) {
			if (fd >= 0)
				close(fd);
			daemons[k].fd = -1;
			continue; /* no such kind here: every reader is in "the" one */
		}
		daemons[k].ino = st.st_ino;
		daemons[k].fd = -1;
		if (RNS(k) & RNS_ENTERABLE)
			daemons[k].fd = fd;
		else
			close(fd);
	}
	return 0;
}

unsigned long reader_ns_of(int tid, enum reader_ns_kind kind)
{
	char path[48];
	struct stat st;

	snprintf(path, sizeof(path), "%d/ns/%s", tid, kinds[kind].file);
	return tid > 0 && fstatat(self_proc, path, &st, 0) == 0 ? st.st_ino : 0;
}

int reader_ns_is_daemons(enum reader_ns_kind kind, unsigned long ino)
{
	return ino == daemons[kind].ino;
}

/* Open namespace files by (kind, inode): an inode names one namespace for
 * as long as a file of it is open, so a cached file is the namespace the
 * caller's ns/ names when the inodes match. */
#define NS_CACHE_SIZE 64
#define NS_IDLE_NS (5ULL * 1000000000ULL)

static struct ns_file {
	int kind;
	unsigned long ino;
	int fd;    /* -1: free slot */
	int users; /* threads in setns() with it */
	uint64_t used_ns;
} cache[NS_CACHE_SIZE];
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t cache_once = PTHREAD_ONCE_INIT;

static void cache_init(void)
{
	for (int i = 0; i < NS_CACHE_SIZE; i++)
		cache[i].fd = -1;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* A free slot, or the one unused longest; NULL when all are in use. */
static struct ns_file *slot_to_fill(void)
{
	struct ns_file *best = NULL;

	for (int i = 0; i < NS_CACHE_SIZE; i++) {
		struct ns_file *f = &cache[i];

		if (f->fd < 0)
			return f;
		if (!f->users && (!best || f->used_ns < best->used_ns))
			best = f;
	}
	if (best)
		close(best->fd);
	return best;
}

/* An open file keeps a gone container's namespace alive: files unused for a
 * while are closed (cache_lock held). */
static void close_idle(void)
{
	uint64_t now = now_ns();

	for (int i = 0; i < NS_CACHE_SIZE; i++) {
		struct ns_file *f = &cache[i];

		if (f->fd >= 0 && !f->users && now - f->used_ns > NS_IDLE_NS) {
			close(f->fd);
			f->fd = -1;
		}
	}
}

static struct ns_file *cache_get(int kind, unsigned long ino)
{
	for (int i = 0; i < NS_CACHE_SIZE; i++)
		if (cache[i].fd >= 0 && cache[i].kind == kind && cache[i].ino == ino)
			return &cache[i];
	return NULL;
}

/* The namespace file of tid's namespace of kind whose inode is ino, held
 * for the caller (ns_file_put), or NULL with errno. */
static struct ns_file *ns_file_get(int tid, int kind, unsigned long ino)
{
	char path[48];
	struct ns_file *f;
	struct stat st;
	int fd;

	pthread_once(&cache_once, cache_init);
	pthread_mutex_lock(&cache_lock);
	f = cache_get(kind, ino);
	if (f) {
		f->users++;
		pthread_mutex_unlock(&cache_lock);
		return f;
	}
	pthread_mutex_unlock(&cache_lock);
	snprintf(path, sizeof(path), "%d/ns/%s", tid, kinds[kind].file);
	fd = openat(self_proc, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	/* the caller moved between fstatat and open: not the namespace it named */
	if (fstat(fd, &st) || st.st_ino != ino) {
		close(fd);
		errno = ESRCH;
		return NULL;
	}
	pthread_mutex_lock(&cache_lock);
	close_idle();
	if ((f = cache_get(kind, ino))) { /* another thread was quicker */
		close(fd);
	} else if ((f = slot_to_fill())) {
		*f = (struct ns_file){ kind, ino, fd, 0, 0 };
	} else {
		pthread_mutex_unlock(&cache_lock);
		close(fd);
		errno = EBUSY;
		return NULL;
	}
	f->users++;
	pthread_mutex_unlock(&cache_lock);
	return f;
}

static void ns_file_put(struct ns_file *f)
{
	pthread_mutex_lock(&cache_lock);
	f->users--;
	f->used_ns = now_ns();
	pthread_mutex_unlock(&cache_lock);
}

void reader_ns_trim(void)
{
	pthread_once(&cache_once, cache_init);
	pthread_mutex_lock(&cache_lock);
	close_idle();
	pthread_mutex_unlock(&cache_lock);
}

static int enter_one(int tid, int kind, unsigned long ino)
{
	struct ns_file *f = ns_file_get(tid, kind, ino);
	int r;

	if (!f)
		return -errno;
	r = setns(f->fd, kinds[kind].type) ? -errno : 0;
	ns_file_put(f);
	return r;
}

void reader_ns_leave(struct reader_ns *rn)
{
	for (int k = 0; k < RNS_KINDS; k++) {
		if (!(rn->entered & RNS(k)))
			continue;
		/* A worker left in a reader's namespace would serve the next
		 * caller there: stop, and let the supervisor start a server. */
		if (setns(daemons[k].fd, kinds[k].type)) {
			log_err("cannot return to the daemon's %s namespace: %s", kinds[k].file,
				strerror(errno));
			abort();
		}
	}
	rn->entered = 0;
}

int reader_ns_enter(int tid, unsigned asked, struct reader_ns *rn)
{
	rn->entered = rn->foreign = 0;
	for (int k = 0; k < RNS_KINDS; k++) {
		unsigned long ino;
		int r;

		if (!(asked & RNS(k)) || !daemons[k].ino)
			continue;
		ino = reader_ns_of(tid, k);
		if (!ino) /* an unknown caller (outside our pid namespace), or gone */
			goto fail;
		if (ino == daemons[k].ino)
			continue;
		if (!(RNS(k) & RNS_ENTERABLE)) {
			rn->foreign |= RNS(k);
			continue;
		}
		if ((r = enter_one(tid, k, ino))) {
			log_debug("cannot enter %d's %s namespace: %s", tid, kinds[k].file, strerror(-r));
			goto fail;
		}
		rn->entered |= RNS(k);
	}
	return 0;
fail:
	reader_ns_leave(rn);
	return -EPERM;
}
