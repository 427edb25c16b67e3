/* Directories of a thread whose names are the same for every thread: the
 * thread's own directory (PID/task/TID, the kernel's table of per-thread
 * entries), its ns/ and its attr/ (and attr's subdirectories). They are
 * listed from copies of the daemon's own, taken on first use, so walking
 * thousands of threads does not make procfs build an inode and a dentry per
 * entry per thread for the daemon's reads. Offsets are procfs's. */
#include "fs/request/thread_dir.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fs/entries/dedup.h"
#include "fs/entries/name_class.h"
#include "fs/lib/cleanup.h"
#include "fs/lib/proc_names.h"
#include "fs/lib/settings.h"
#include "fs/request/dir_reply.h"
#include "fs/request/node_life.h"

#define MAX_TEMPLATES 32

struct template_entry {
	char name[256];
	unsigned char type;
	ino_t ino;
	off_t pos;
	off_t next;
};

struct template {
	char suffix[128]; /* path below PID/task/TID: "", "ns", "attr", ... */
	size_t n;
	struct template_entry e[];
};

static struct template *_Atomic templates[MAX_TEMPLATES];
static _Atomic int ntemplates;
static pthread_mutex_t build_lock = PTHREAD_MUTEX_INITIALIZER;
static int enabled;

void thread_dir_init(int same_pid_ns)
{
	/* The copies come from the daemon's own threads, as the source names them. */
	enabled = same_pid_ns;
}

void thread_dir_destroy(void)
{
	for (int i = 0; i < atomic_load(&ntemplates); i++)
		free(atomic_load(&templates[i]));
	atomic_store(&ntemplates, 0);
}

/* The part of a thread directory's path below "P/task/T" if its names are
 * fixed, else NULL. */
static const char *fixed_suffix(const struct node *dir)
{
	pid_t p, t;

	if (!enabled || dir->kind != NODE_MIRROR || !(dir->cls->flags & NC_TEMPLATE))
		return NULL;
	return thread_path_split(dir->path, &p, &t);
}

static struct template *find_template(const char *suffix)
{
	int n = atomic_load_explicit(&ntemplates, memory_order_acquire);

	for (int i = 0; i < n; i++) {
		struct template *t = atomic_load_explicit(&templates[i], memory_order_acquire);

		if (!strcmp(t->suffix, suffix))
			return t;
	}
	return NULL;
}

static struct template *read_template(const char *suffix)
{
	char path[PATH_MAX];
	__do_close int fd = -1;
	struct template *t = NULL;
	size_t cap = 0;
	off_t pos = 0;
	DIR *d;
	struct dirent *de;

	snprintf(path, sizeof(path), "%d/task/%d%s%s", getpid(), (int)syscall(SYS_gettid),
		 *suffix ? "/" : "", suffix);
	fd = openat(pf.srcfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || !(d = fdopendir(fd)))
		return NULL;
	move_fd(&fd);
	while ((de = readdir(d))) {
		if (!t || t->n == cap) {
			struct template *more = realloc(t, sizeof(*t) + (cap = cap ? cap * 2 : 64) *
								     sizeof(struct template_entry));
			if (!more)
				break;
			if (!t)
				more->n = 0;
			t = more;
		}
		struct template_entry *e = &t->e[t->n++];
		snprintf(e->name, sizeof(e->name), "%s", de->d_name);
		e->type = de->d_type;
		e->ino = de->d_ino;
		e->pos = pos;
		e->next = pos = de->d_off;
	}
	closedir(d);
	if (t)
		snprintf(t->suffix, sizeof(t->suffix), "%s", suffix);
	return t;
}

/* Found, or read once and published (readers never lock). */
static struct template *template_for(const char *suffix)
{
	struct template *t = find_template(suffix);
	int n;

	if (t)
		return t;
	pthread_mutex_lock(&build_lock);
	t = find_template(suffix);
	n = atomic_load(&ntemplates);
	if (!t && n < MAX_TEMPLATES && (t = read_template(suffix))) {
		atomic_store_explicit(&templates[n], t, memory_order_release);
		atomic_store_explicit(&ntemplates, n + 1, memory_order_release);
	}
	pthread_mutex_unlock(&build_lock);
	return t;
}

int thread_dir_listed(const struct node *dir)
{
	const char *suffix = fixed_suffix(dir);

	return suffix && template_for(suffix);
}

int thread_dir_fill(struct dir_reply *r, off_t off)
{
	const struct template *t = template_for(fixed_suffix(r->dir));
	struct dedup_listing dl = { 0 };
	int err;

	if (node_gone(r->dir))
		return -ENOENT; /* procfs: the thread is gone */
	if ((err = node_alive(r->dir)))
		return err;
	if (!*t->suffix)
		dedup_listing_init(r->dir, &dl);
	for (size_t i = 0; i < t->n; i++) {
		const struct template_entry *e = &t->e[i];

		if (e->pos >= off &&
		    !dir_reply_add(r, e->name, dedup_dtype(&dl, e->name, e->type), e->ino, e->next))
			break;
	}
	return 0;
}
