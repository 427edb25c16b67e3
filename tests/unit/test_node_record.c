/* cache/nodes/node_record.c: the node table a draining server leaves to the next.
 * What the fuzz target (tests/fuzz/fuzz_node_record.c) cannot tell: a record
 * of another version is skipped whole, a damaged one is refused whole, and
 * either way it is emptied, so that no server takes it twice. */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache/nodes/node.h"
#include "cache/nodes/node_record.h"

static const char class_token;

static const struct name_class *complete(const struct node *parent, const char *name,
					 struct node_owner *owner)
{
	(void)parent;
	(void)name;
	owner->daemon_pid = owner->pid; /* the daemon's own namespace */
	return (const struct name_class *)&class_token;
}

/* A process directory with one file, looked up 3 and 2 times; their ids. */
static void populate(uint64_t ids[2])
{
	struct stat dir = { .st_mode = S_IFDIR | 0555 }, file = { .st_mode = S_IFREG | 0444 };
	struct node_owner owner = { .pid = 42, .tgid = 42, .gen = 7 };
	struct node *d = node_get_or_insert(node_root(), "42", "42", &dir,
					    &(struct node_identity){ NODE_MIRROR, S_IFDIR, 7 }, &owner, NULL, 0);
	struct node *f = node_get_or_insert(d, "stat", "42/stat", &file,
					    &(struct node_identity){ NODE_MIRROR, S_IFREG, 7 }, &owner, NULL, 0);

	assert(d && f);
	atomic_store(&d->nlookup, 3);
	atomic_store(&f->nlookup, 2);
	ids[0] = node_ino(d);
	ids[1] = node_ino(f);
}

/* The record of a table as populate makes it, in a fresh table. */
static int saved_record(uint64_t ids[2])
{
	int fd = memfd_create("unit-nodes", MFD_CLOEXEC);

	assert(fd >= 0 && node_table_init(NULL) == 0);
	populate(ids);
	assert(node_record_save(fd) == 2);
	node_table_destroy();
	assert(node_table_init(NULL) == 0);
	return fd;
}

static off_t size_of(int fd)
{
	return lseek(fd, 0, SEEK_END);
}

static void taken_whole(void)
{
	uint64_t ids[2];
	int fd = saved_record(ids);
	struct node *d, *f;

	assert(node_record_load(fd, complete) == 2);
	d = node_from_ino(ids[0]);
	f = node_from_ino(ids[1]);
	assert(d && f && f->parent_serial == ids[0] && !strcmp(f->path, "42/stat"));
	assert(atomic_load(&d->nlookup) == 3 && atomic_load(&f->nlookup) == 2);
	assert(d->owner.gen == 7 && f->owner.daemon_pid == 42);
	assert(size_of(fd) == 0);
	/* a second load (a server after a crash) takes nothing */
	assert(node_record_load(fd, complete) == 0);
	close(fd);
	node_table_destroy();
}

static void another_version_skipped(void)
{
	uint64_t ids[2];
	int fd = saved_record(ids);

	assert(pwrite(fd, "procfast-nodes 2", 16, 0) == 16);
	assert(node_record_load(fd, complete) == 0);
	assert(!node_from_ino(ids[0]) && !node_from_ino(ids[1]));
	assert(size_of(fd) == 0);
	close(fd);
	node_table_destroy();
}

static void damaged_refused(void)
{
	uint64_t ids[2];
	int fd = saved_record(ids);

	assert(ftruncate(fd, size_of(fd) - 3) == 0); /* the last path cut short */
	assert(node_record_load(fd, complete) == -EINVAL);
	assert(!node_from_ino(ids[0]) && !node_from_ino(ids[1]));
	assert(size_of(fd) == 0);
	close(fd);
	node_table_destroy();
}

int main(void)
{
	taken_whole();
	another_version_skipped();
	damaged_refused();
	return 0;
}
