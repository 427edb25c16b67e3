#include "fs/caller/reader_ns.h"

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

#include "fs/lib/clock.h"
#include "fs/lib/fusectl.h"
#include "fs/lib/log.h"

static const struct {
	const char *file; /* below /proc/TID/ */
	int type;         /* setns's nstype; 0 for the root directory */
} kinds[RNS_KINDS] = {
	[RNS_NET] = { "ns/net", CLONE_NEWNET },
	[RNS_UTS] = { "ns/uts", CLONE_NEWUTS },
	[RNS_IPC] = { "ns/ipc", CLONE_NEWIPC },
	[RNS_CGROUP] = { "ns/cgroup", CLONE_NEWCGROUP },
	[RNS_ROOT] = { "root", 0 },
	[RNS_USER] = { "ns/user", CLONE_NEWUSER },
	[RNS_TIME] = { "ns/time", CLONE_NEWTIME },
	[RNS_PID] = { "ns/pid", CLONE_NEWPID },
};

const char *reader_ns_file(enum reader_ns_kind kind)
{
	return kinds[kind].file;
}

int reader_ns_type(enum reader_ns_kind kind)
{
	return kinds[kind].type;
}

/* Which one of its kind: a namespace's inode; a root directory's mount and
 * inode (one directory may be the root of several mounts, whose paths
 * differ). */
struct ctx_id {
	uint64_t ino;
	uint64_t mnt;
};

static int self_proc = -1;
static struct {
	struct ctx_id id; /* ino 0: the kernel has no such namespace kind */
	int fd;           /* to come back to (enterable kinds) */
} daemons[RNS_KINDS];
static int daemon_cwd = -1;

/* fusectl's root (fs/lib/fusectl.h), or -errno when there is none */
static int fusectl = -1;

/* Whether a root directory lies in a FUSE mount: entering it (fchdir,
 * chroot) would ask that mount's server for its permission, and that server
 * may be this daemon, waiting for the very worker that asks, or one that
 * need never answer. A FUSE connection, and only one, has a directory in
 * fusectl named by its device (the kernel's dev_t: major << 20 | minor).
 * Where that cannot be told, an anonymous device counts as FUSE. */
static int root_in_fuse_mount(const struct statx *sx)
{
	char name[16];

	if (fusectl < 0)
		return sx->stx_dev_major == 0;
	snprintf(name, sizeof(name), "%u", sx->stx_dev_major << 20 | sx->stx_dev_minor);
	return faccessat(fusectl, name, F_OK, 0) == 0;
}

/* A namespace link's text, "user:[4026531837]" (fs/nsfs.c ns_get_name),
 * names its inode: reading it costs a third of a stat that follows the link,
 * which makes the namespace file's dentry (0.8 against 2.4 µs here, on every
 * request of a caller with capabilities). */
static int ns_ino_of(const char *path, uint64_t *ino)
{
	char text[64], *open, *end;
	ssize_t n = readlinkat(self_proc, path, text, sizeof(text) - 1);

	if (n < 0)
		return -errno;
	text[n] = '\0';
	if (!(open = strstr(text, ":[")))
		return -EINVAL;
	*ino = strtoull(open + 2, &end, 10);
	return *end == ']' && end > open + 2 ? 0 : -EINVAL;
}

/* tid's namespace (or root) of that kind, as it names it now. */
static int id_of(const char *task, enum reader_ns_kind kind, struct ctx_id *id)
{
	char path[48];
	struct statx sx;

	snprintf(path, sizeof(path), "%s/%s", task, kinds[kind].file);
	id->mnt = 0;
	if (kinds[kind].type)
		return ns_ino_of(path, &id->ino);
	/* DONT_SYNC: the root may lie in a FUSE mount (this one, say), whose
	 * server must not be asked: it may be waiting for this very worker. */
	if (statx(self_proc, path, AT_STATX_DONT_SYNC, STATX_INO | STATX_MNT_ID, &sx))
		return -errno;
	id->ino = sx.stx_ino;
	id->mnt = sx.stx_mnt_id;
	return 0;
}

/* What one request learnt of its caller's namespaces (reader_ns_request):
 * its share (fair.c), its capabilities' namespace (caller.c) and the kinds
 * entered for it ask the same links, and a caller waiting for its request
 * cannot change them (setns and unshare act on the calling thread). Its
 * root is asked afresh: a thread sharing the caller's fs may chroot. */
static __thread struct {
	int active;
	pid_t tid;
	unsigned known; /* RNS bits */
	uint64_t ino[RNS_KINDS];
} asked;

void reader_ns_request(int begins)
{
	asked.active = begins;
	asked.known = 0;
}

static int task_id(pid_t tid, enum reader_ns_kind kind, struct ctx_id *id)
{
	char task[16];
	int r;

	if (asked.active && asked.tid == tid && (asked.known & RNS(kind))) {
		id->ino = asked.ino[kind];
		id->mnt = 0;
		return 0;
	}
	snprintf(task, sizeof(task), "%d", tid);
	if ((r = id_of(task, kind, id)) || !asked.active || !kinds[kind].type)
		return r;
	if (asked.tid != tid) {
		asked.tid = tid;
		asked.known = 0;
	}
	asked.ino[kind] = id->ino;
	asked.known |= RNS(kind);
	return 0;
}

static int same_id(const struct ctx_id *a, const struct ctx_id *b)
{
	return a->ino == b->ino && a->mnt == b->mnt;
}

int reader_ns_init(int selfproc)
{
	self_proc = selfproc;
	daemon_cwd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if ((fusectl = fusectl_dir()) < 0)
		log_warn("no fusectl: a reader whose root is on any anonymous device (overlay, "
			 "tmpfs, FUSE) gets EPERM for what procfs shows relative to its root");
	for (int k = 0; k < RNS_KINDS; k++) {
		char path[32];

		daemons[k].fd = -1;
		if (id_of("self", k, &daemons[k].id)) {
			daemons[k].id.ino = 0; /* no such kind here: every reader is in "the" one */
			continue;
		}
		snprintf(path, sizeof(path), "self/%s", kinds[k].file);
		if ((RNS(k) & RNS_ENTERABLE) &&
		    (daemons[k].fd = openat(selfproc, path, O_RDONLY | O_CLOEXEC)) < 0)
			return -errno;
	}
	return daemon_cwd < 0 ? -errno : 0;
}

unsigned long reader_ns_of(int tid, enum reader_ns_kind kind)
{
	struct ctx_id id;

	return tid > 0 && task_id(tid, kind, &id) == 0 ? id.ino : 0;
}

int reader_ns_is_daemons(enum reader_ns_kind kind, unsigned long ino)
{
	return ino == daemons[kind].id.ino;
}

/* Open namespace files by (kind, inode): an inode names one namespace for
 * as long as a file of it is open, so a cached file is the namespace the
 * caller's ns/ names when the inodes match. */
#define NS_CACHE_SIZE 64
#define NS_IDLE_NS (5ULL * 1000000000ULL)

static struct ns_file {
	int kind;
	struct ctx_id id;
	int fd;    /* -1: free slot */
	int users; /* threads in setns() with it */
	int fuse;  /* a root directory in a FUSE mount: never entered */
	uint64_t used_ns;
} cache[NS_CACHE_SIZE];
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t cache_once = PTHREAD_ONCE_INIT;

static void cache_init(void)
{
	for (int i = 0; i < NS_CACHE_SIZE; i++)
		cache[i].fd = -1;
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

static struct ns_file *cache_get(int kind, const struct ctx_id *id)
{
	for (int i = 0; i < NS_CACHE_SIZE; i++)
		if (cache[i].fd >= 0 && cache[i].kind == kind && same_id(&cache[i].id, id))
			return &cache[i];
	return NULL;
}

/* The file of tid's namespace (root) of kind that is id, held for the
 * caller (ns_file_put), or NULL with errno. */
static struct ns_file *ns_file_get(int tid, int kind, const struct ctx_id *id)
{
	char path[48];
	struct ns_file *f;
	struct statx sx;
	int fd, fuse;

	pthread_once(&cache_once, cache_init);
	pthread_mutex_lock(&cache_lock);
	f = cache_get(kind, id);
	if (f) {
		f->users++;
		pthread_mutex_unlock(&cache_lock);
		return f;
	}
	pthread_mutex_unlock(&cache_lock);
	snprintf(path, sizeof(path), "%d/%s", tid, kinds[kind].file);
	fd = openat(self_proc, path, (kinds[kind].type ? O_RDONLY : O_PATH | O_DIRECTORY) | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	/* the caller moved between id_of and the open: not the one it named */
	if (statx(fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_INO | STATX_MNT_ID, &sx) ||
	    sx.stx_ino != id->ino || (!kinds[kind].type && sx.stx_mnt_id != id->mnt)) {
		close(fd);
		errno = ESRCH;
		return NULL;
	}
	fuse = !kinds[kind].type && root_in_fuse_mount(&sx);
	pthread_mutex_lock(&cache_lock);
	close_idle();
	if ((f = cache_get(kind, id))) { /* another thread was quicker */
		close(fd);
	} else if ((f = slot_to_fill())) {
		*f = (struct ns_file){ kind, *id, fd, 0, fuse, 0 };
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

/* A root directory is entered with chroot: the thread's own once it has a
 * filesystem context of its own (threads share one until unshare). */
static int enter_root(int fd)
{
	static __thread int own_fs;

	if (!own_fs) {
		if (unshare(CLONE_FS))
			return -errno;
		own_fs = 1;
	}
	return fchdir(fd) || chroot(".") ? -errno : 0;
}

static int enter(int fd, int kind)
{
	if (!kinds[kind].type)
		return enter_root(fd);
	return setns(fd, kinds[kind].type) ? -errno : 0;
}

static int enter_one(int tid, int kind, const struct ctx_id *id)
{
	struct ns_file *f = ns_file_get(tid, kind, id);
	int r;

	if (!f)
		return -errno;
	r = f->fuse ? -EACCES : enter(f->fd, kind);
	ns_file_put(f);
	return r;
}

static int leave_one(int kind)
{
	if (enter(daemons[kind].fd, kind))
		return -1;
	return kinds[kind].type || !fchdir(daemon_cwd) ? 0 : -1;
}

void reader_ns_leave(struct reader_ns *rn)
{
	for (int k = 0; k < RNS_KINDS; k++) {
		if (!(rn->entered & RNS(k)))
			continue;
		/* A worker left in a reader's namespace would serve the next
		 * caller there: stop, and let the supervisor start a server. */
		if (leave_one(k)) {
			log_err("cannot return to the daemon's %s: %s", kinds[k].file, strerror(errno));
			abort();
		}
	}
	rn->entered = 0;
}

int reader_ns_enter(int tid, unsigned kinds_asked, struct reader_ns *rn)
{
	rn->entered = rn->foreign = 0;
	for (int k = 0; k < RNS_KINDS; k++) {
		struct ctx_id id;
		int r;

		if (!(kinds_asked & RNS(k)) || !daemons[k].id.ino)
			continue;
		/* an unknown caller (outside our pid namespace), or gone */
		if (tid <= 0 || task_id(tid, k, &id))
			goto fail;
		if (same_id(&id, &daemons[k].id))
			continue;
		if (!(RNS(k) & RNS_ENTERABLE)) {
			rn->foreign |= RNS(k);
			continue;
		}
		if ((r = enter_one(tid, k, &id))) {
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
