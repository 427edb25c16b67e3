/* A thread's directory (PID/task/TID) lists the same names for every thread:
 * the kernel's table of per-thread entries. It is listed from a copy taken
 * at start-up, so walking thousands of threads does not make procfs build
 * ~140 inodes and dentries per thread for the daemon's own reads. Offsets
 * are procfs's (the table index + 2). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fs/cleanup.h"
#include "fs/procfast.h"

struct template_entry {
	char name[256];
	unsigned char type;
	ino_t ino;
	off_t pos;
	off_t next;
};

static struct template_entry *entries;
static size_t nentries;

/* Reads the daemon's own thread directory in the source; without it (a
 * source of another pid namespace) thread directories are read as they are. */
int thread_dir_init(int same_pid_ns)
{
	char path[64];
	__do_close int fd = -1;
	size_t cap = 0;
	off_t pos = 0;
	DIR *d;
	struct dirent *de;

	if (!same_pid_ns)
		return 0;
	snprintf(path, sizeof(path), "%d/task/%d", getpid(), (int)syscall(SYS_gettid));
	fd = openat(pf.srcfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || !(d = fdopendir(fd)))
		return 0;
	move_fd(&fd);
	while ((de = readdir(d))) {
		if (nentries == cap) {
			struct template_entry *more = realloc(entries, (cap = cap ? cap * 2 : 128) * sizeof(*more));

			if (!more) {
				closedir(d);
				free(entries);
				entries = NULL;
				nentries = 0;
				return -ENOMEM;
			}
			entries = more;
		}
		struct template_entry *e = &entries[nentries++];
		snprintf(e->name, sizeof(e->name), "%s", de->d_name);
		e->type = de->d_type;
		e->ino = de->d_ino;
		e->pos = pos;
		e->next = pos = de->d_off;
	}
	closedir(d);
	return 0;
}

void thread_dir_destroy(void)
{
	free(entries);
	entries = NULL;
	nentries = 0;
}

int thread_dir_listed(const struct node *dir)
{
	return nentries && node_is_thread_dir(dir, NULL, NULL);
}

ssize_t thread_dir_fill(fuse_req_t req, const struct node *dir, char *out, size_t size, off_t off)
{
	struct dedup_listing dl;
	size_t used = 0;

	if (node_alive(dir))
		return -ENOENT; /* procfs: the thread is gone */
	dedup_listing_init(dir, &dl);
	for (size_t i = 0; i < nentries; i++) {
		const struct template_entry *e = &entries[i];
		struct stat st = { .st_ino = e->ino,
				   .st_mode = (mode_t)dedup_dtype(&dl, e->name, e->type) << 12 };
		size_t need;

		if (e->pos < off)
			continue;
		need = fuse_add_direntry(req, out + used, size - used, e->name, &st, e->next);
		if (need > size - used)
			break;
		used += need;
	}
	return (ssize_t)used;
}
