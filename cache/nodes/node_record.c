/* The node table's hand-over record (node_record.h).
 *
 * Format: a line "procfast-nodes 1\n", then per node a fixed header (struct
 * wire, this machine's byte order: the record never leaves it) followed by
 * the name and the path, each without a NUL. */
#include "cache/nodes/node_record.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs/lib/cleanup.h"
#include "fs/lib/log.h"

#define RECORD_MAGIC "procfast-nodes 1\n"

struct wire {
	uint64_t serial, parent, ino, gen, nlookup;
	uint32_t kind, type, mode, uid, gid, nlink;
	int32_t pid, tgid;
	uint32_t name_len, path_len;
};

static void write_one(const struct node *n, void *arg)
{
	FILE *f = arg;
	struct stat st;
	struct wire w;

	node_recall(n, &st);
	w = (struct wire){
		.serial = n->serial, .parent = n->parent_serial, .ino = st.st_ino,
		.gen = n->owner.gen, .nlookup = atomic_load(&n->nlookup),
		.kind = n->kind, .type = n->type, .mode = st.st_mode, .uid = st.st_uid,
		.gid = st.st_gid, .nlink = (uint32_t)st.st_nlink, .pid = n->owner.pid,
		.tgid = n->owner.tgid, .name_len = (uint32_t)strlen(n->name),
		.path_len = (uint32_t)strlen(n->path),
	};
	if (w.nlookup == 0) /* on its way out: the kernel forgot it */
		return;
	fwrite(&w, sizeof(w), 1, f);
	fwrite(n->name, 1, w.name_len, f);
	fwrite(n->path, 1, w.path_len, f);
}

static int counted(const struct node_record *r, void *arg)
{
	(void)r;
	++*(long *)arg;
	return 0;
}

long node_record_save(int fd)
{
	__do_free char *buf = NULL;
	size_t len = 0;
	long n = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return -errno;
	fputs(RECORD_MAGIC, f);
	node_for_each(write_one, f);
	if (fclose(f))
		return -ENOMEM;
	if (ftruncate(fd, 0) || pwrite(fd, buf, len, 0) != (ssize_t)len)
		return -errno;
	node_record_parse(buf, len, counted, &n);
	return n;
}

long node_record_parse(const char *buf, size_t len, int (*take)(const struct node_record *r, void *arg),
		       void *arg)
{
	size_t at = sizeof(RECORD_MAGIC) - 1;
	long n = 0;
	int r;

	if (len < at || memcmp(buf, RECORD_MAGIC, at))
		return 0; /* none, or another version's */
	while (at < len) {
		struct wire w;
		char name[4096], path[4096];

		if (len - at < sizeof(w))
			return -EINVAL;
		memcpy(&w, buf + at, sizeof(w));
		at += sizeof(w);
		if (w.name_len >= sizeof(name) || w.path_len >= sizeof(path) ||
		    len - at < (size_t)w.name_len + w.path_len)
			return -EINVAL;
		memcpy(name, buf + at, w.name_len);
		name[w.name_len] = '\0';
		memcpy(path, buf + at + w.name_len, w.path_len);
		path[w.path_len] = '\0';
		at += (size_t)w.name_len + w.path_len;
		if (strlen(name) != w.name_len || strlen(path) != w.path_len)
			return -EINVAL;
		if ((r = take(&(struct node_record){ w.serial, w.parent, w.ino, w.gen, w.nlookup, w.kind,
						     w.type, w.mode, w.uid, w.gid, w.nlink, w.pid,
						     w.tgid, name, path }, arg)))
			return r;
		n++;
	}
	return n;
}

/* ---- loading: records are gathered, then put in parents first ---- */

struct gathered {
	struct node_record *recs;
	size_t n, cap;
};

static int gather(const struct node_record *r, void *arg)
{
	struct gathered *g = arg;
	struct node_record copy = *r;
	char *name, *path;

	if (g->n == g->cap) {
		size_t cap = g->cap ? g->cap * 2 : 256;
		struct node_record *more = realloc(g->recs, cap * sizeof(*more));

		if (!more)
			return -ENOMEM;
		g->recs = more;
		g->cap = cap;
	}
	name = strdup(r->name);
	path = strdup(r->path);
	if (!name || !path) {
		free(name);
		free(path);
		return -ENOMEM;
	}
	copy.name = name;
	copy.path = path;
	g->recs[g->n++] = copy;
	return 0;
}

static void gathered_free(struct gathered *g)
{
	for (size_t i = 0; i < g->n; i++) {
		free((char *)g->recs[i].name);
		free((char *)g->recs[i].path);
	}
	free(g->recs);
}

/* A child is always younger than its parent: ascending ids put parents first. */
static int by_serial(const void *a, const void *b)
{
	uint64_t x = ((const struct node_record *)a)->serial, y = ((const struct node_record *)b)->serial;

	return x < y ? -1 : x > y;
}

static int valid_kind(uint32_t kind)
{
	return kind == NODE_MIRROR || kind == NODE_CALLER_LINK || kind == NODE_LINK_TARGET ||
	       kind == NODE_DEDUP_LINK;
}

static int put_one(const struct node_record *r, node_record_complete_fn complete)
{
	struct node *parent = node_from_ino(r->parent);
	struct node_owner owner = { .pid = r->pid, .tgid = r->tgid, .gen = r->gen };
	const struct name_class *cls;
	struct stat st = { .st_mode = r->mode, .st_uid = r->uid, .st_gid = r->gid,
			   .st_nlink = r->nlink, .st_ino = r->ino };

	if (!parent || parent->type != S_IFDIR || !valid_kind(r->kind) || r->nlookup == 0 ||
	    r->serial <= NODE_FIXED_MAX || node_from_ino(r->serial))
		return 0;
	if (!(cls = complete(parent, r->name, &owner)))
		return 0;
	return node_insert_as(parent, r->name, r->path, &st,
			      &(struct node_identity){ r->kind, r->type, r->gen }, &owner, cls,
			      r->serial, r->nlookup) != NULL;
}

static char *map_whole(int fd, size_t *len)
{
	struct stat st;
	void *p;

	if (fstat(fd, &st) || st.st_size <= 0)
		return NULL;
	p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (p == MAP_FAILED)
		return NULL;
	*len = (size_t)st.st_size;
	return p;
}

long node_record_load(int fd, node_record_complete_fn complete)
{
	struct gathered g = { 0 };
	size_t len = 0;
	char *buf = map_whole(fd, &len);
	long r, taken = 0;

	if (!buf)
		return 0;
	r = node_record_parse(buf, len, gather, &g);
	munmap(buf, len);
	if (ftruncate(fd, 0))
		log_warn("cannot empty the node record: %s", strerror(errno));
	if (r < 0) {
		log_warn("the node record handed over is damaged: its ids answer ESTALE");
		gathered_free(&g);
		return r;
	}
	if (g.n)
		qsort(g.recs, g.n, sizeof(*g.recs), by_serial);
	for (size_t i = 0; i < g.n; i++)
		taken += put_one(&g.recs[i], complete);
	gathered_free(&g);
	return taken;
}
