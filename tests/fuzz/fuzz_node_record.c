/* The node table's hand-over record (cache/nodes/node_record.c), which a draining
 * server leaves to the next one on the same connection. Properties:
 *  - any bytes parse to records or to -EINVAL, without a crash or a leak;
 *  - a table built from the input (a tree of any names, kinds and lookup
 *    counts) saved and loaded into a fresh table comes back whole: every id
 *    names a node of the same parent, name, path, kind, owner, attributes
 *    and lookup count, and ids given out after the load are above them all.
 */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache/nodes/node.h"
#include "cache/nodes/node_record.h"

#define MAX_NODES 64

static const char class_token; /* the class the loader is told: not read here */

static const struct name_class *complete(const struct node *parent, const char *name,
					 struct node_owner *owner)
{
	(void)parent;
	(void)owner;
	return name[0] == 'x' ? NULL : (const struct name_class *)&class_token; /* 'x': unknown */
}

static int any(const struct node_record *r, void *arg)
{
	(void)r;
	(void)arg;
	return 0;
}

struct made {
	uint64_t serial, parent, gen, nlookup;
	char name[8], path[64];
	enum node_kind kind;
	mode_t type;
	pid_t pid;
	int is_dir;
};

/* One node per 4 input bytes: parent (among the directories so far), name,
 * kind and type, lookup count. */
static size_t build(const uint8_t *data, size_t size, struct made *m)
{
	struct node *dirs[MAX_NODES] = { node_root() };
	size_t ndirs = 1, n = 0;

	for (size_t off = 0; off + 4 <= size && n < MAX_NODES; off += 4) {
		struct node *parent = dirs[data[off] % ndirs], *made;
		int is_dir = data[off + 2] & 1;
		struct made *x = &m[n];
		struct stat st = { .st_mode = (is_dir ? S_IFDIR : S_IFREG) | 0555, .st_ino = off,
				   .st_uid = data[off + 1], .st_nlink = 1 + is_dir };

		snprintf(x->name, sizeof(x->name), "%c%u", "nxy"[data[off + 1] % 3], data[off + 1]);
		snprintf(x->path, sizeof(x->path), "%.40s/%s", parent->path, x->name);
		x->kind = 1 + (data[off + 2] >> 1) % 4;
		x->type = st.st_mode & S_IFMT;
		x->pid = data[off + 1];
		x->gen = data[off + 3];
		x->nlookup = 1 + data[off + 3] % 5;
		x->is_dir = is_dir;
		made = node_get_or_insert(parent, x->name, x->path, &st,
					  &(struct node_identity){ x->kind, st.st_mode, x->gen },
					  &(struct node_owner){ .pid = x->pid, .tgid = x->pid, .gen = x->gen },
					  NULL, 0);
		assert(made);
		if (atomic_load(&made->nlookup) > 1) { /* the same identity again: one node */
			node_forget(made, 1);
			continue;
		}
		atomic_store(&made->nlookup, x->nlookup);
		x->serial = node_ino(made);
		x->parent = parent->serial;
		if (is_dir && ndirs < MAX_NODES)
			dirs[ndirs++] = made;
		n++;
	}
	return n;
}

/* Parents before children: a child whose parent was not loaded is not either. */
static int loaded_parent(const struct made *m, size_t n, uint64_t parent)
{
	if (parent == NODE_ROOT_ID)
		return 1;
	for (size_t i = 0; i < n; i++)
		if (m[i].serial == parent)
			return m[i].name[0] != 'x' && loaded_parent(m, n, m[i].parent);
	return 0;
}

static void check(const struct made *m, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct node *got = node_from_ino(m[i].serial);
		struct stat st;

		if (m[i].name[0] == 'x' || !loaded_parent(m, n, m[i].parent)) {
			assert(!got);
			continue;
		}
		assert(got && got->parent_serial == m[i].parent && !strcmp(got->name, m[i].name) &&
		       !strcmp(got->path, m[i].path) && got->kind == m[i].kind && got->type == m[i].type &&
		       got->owner.pid == m[i].pid && got->owner.gen == m[i].gen &&
		       atomic_load(&got->nlookup) == m[i].nlookup);
		node_recall(got, &st);
		assert((st.st_mode & S_IFMT) == m[i].type && st.st_uid == (uid_t)m[i].pid);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct made m[MAX_NODES];
	uint64_t top = 0;
	size_t n;
	int fd;
	long saved;

	assert(node_record_parse((const char *)data, size, any, NULL) >= -EINVAL);
	assert(node_table_init(NULL) == 0);
	n = build(data, size, m);
	fd = memfd_create("fuzz-nodes", MFD_CLOEXEC);
	assert(fd >= 0);
	saved = node_record_save(fd);
	assert(saved == (long)n);
	node_table_destroy();
	assert(node_table_init(NULL) == 0);
	assert(node_record_load(fd, complete) >= 0);
	check(m, n);
	for (size_t i = 0; i < n; i++)
		top = m[i].serial > top ? m[i].serial : top;
	{
		struct stat st = { .st_mode = S_IFREG };
		struct node *after = node_get_or_insert(node_root(), "after", "after", &st,
							 &(struct node_identity){ NODE_MIRROR, S_IFREG, 0 },
							 &(struct node_owner){ 0 }, NULL, 0);
		assert(after && node_ino(after) > top);
	}
	assert(lseek(fd, 0, SEEK_END) == 0); /* emptied: a crash after cannot take them twice */
	close(fd);
	node_table_destroy();
	return 0;
}
