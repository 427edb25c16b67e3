#include "cache/nodes/node.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <pthread.h>

#include "fs/lib/log.h"
#include "fs/lib/tsan.h"

static struct cds_lfht *table;
static struct cds_lfht *by_id;
static struct node *root;
static _Atomic uint64_t next_serial;
static _Atomic long live_nodes;

/* FNV-1a over the parent's uid and the name: cheap and good enough for a
 * table whose keys are short names. */
static pthread_key_t rcu_thread_key;
static pthread_once_t rcu_key_once = PTHREAD_ONCE_INIT;
static __thread int rcu_registered;

static void rcu_thread_exit(void *unused)
{
	(void)unused;
	rcu_unregister_thread();
}

static void rcu_key_create(void)
{
	pthread_key_create(&rcu_thread_key, rcu_thread_exit);
}

void rcu_thread_register_once(void)
{
	if (rcu_registered)
		return;
	pthread_once(&rcu_key_once, rcu_key_create);
	rcu_register_thread();
	pthread_setspecific(rcu_thread_key, (void *)1);
	rcu_registered = 1;
}

static unsigned long key_hash(uint64_t parent_serial, const char *name)
{
	uint64_t h = 1469598103934665603ULL ^ parent_serial;

	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		h = (h ^ *p) * 1099511628211ULL;
	return (unsigned long)h;
}

static int key_match(struct cds_lfht_node *ht_node, const void *key)
{
	const struct node *n = caa_container_of(ht_node, struct node, by_name);
	const struct node_key *k = key;

	tsan_found(n); /* every lookup sees a node here first */
	return n->parent_serial == k->parent_serial && strcmp(n->name, k->name) == 0;
}

static struct node *node_alloc(const char *path, const char *name)
{
	size_t len = strlen(path) + 1;
	struct node *n = calloc(1, sizeof(*n) + len);

	if (!n)
		return NULL;
	memcpy(n->path, path, len);
	n->name = strdup(name);
	if (!n->name) {
		free(n);
		return NULL;
	}
	n->serial = atomic_fetch_add(&next_serial, 1);
	atomic_fetch_add(&live_nodes, 1);
	return n;
}

static void node_free(struct node *n)
{
	atomic_fetch_sub(&live_nodes, 1);
	free(n->name);
	free(n);
}

static void node_free_rcu(struct rcu_head *head)
{
	node_free(caa_container_of(head, struct node, rcu));
}

static unsigned long id_hash(uint64_t id)
{
	return (unsigned long)(id * 0x9e3779b97f4a7c15ULL);
}

static int id_match(struct cds_lfht_node *ht_node, const void *key)
{
	return caa_container_of(ht_node, struct node, by_id)->serial == *(const uint64_t *)key;
}

/* The node this thread resolved last: a request resolves its id twice, in
 * the stale-id check (fs/request/request.h) and in the operation. Ids are never
 * reused and the kernel names only nodes it holds, so a remembered id
 * always names a live node when it comes again. */
static __thread struct {
	uint64_t ino;
	struct node *node;
} last_resolved;

static struct node *(*fixed_resolver)(uint64_t id);

void node_set_fixed_resolver(struct node *(*resolve_fixed)(uint64_t id))
{
	fixed_resolver = resolve_fixed;
}

static int is_fixed(uint64_t id)
{
	return id > NODE_ROOT_ID && id <= NODE_FIXED_MAX;
}

struct node *node_from_ino(uint64_t ino)
{
	struct cds_lfht_iter iter;
	struct cds_lfht_node *ht;

	if (ino == NODE_ROOT_ID)
		return root;
	if (ino == last_resolved.ino)
		return last_resolved.node;
	rcu_thread_register_once();
	rcu_read_lock();
	cds_lfht_lookup(by_id, id_hash(ino), id_match, &ino, &iter);
	ht = cds_lfht_iter_get_node(&iter);
	rcu_read_unlock();
	if (!ht)
		return is_fixed(ino) && fixed_resolver ? fixed_resolver(ino) : NULL;
	/* The kernel holds a reference on a node it names: it stays. */
	last_resolved.ino = ino;
	last_resolved.node = caa_container_of(ht, struct node, by_id);
	return last_resolved.node;
}

/* The kernel holds every ancestor of a node it holds (a name pins its
 * parent), so each is in the table. */
struct node *node_process_dir(struct node *n)
{
	while (n && n->parent_serial != NODE_ROOT_ID) {
		if (n->kind == NODE_ROOT)
			return NULL;
		n = node_from_ino(n->parent_serial);
	}
	return n && n->owner.tgid ? n : NULL;
}

/* Above every id an earlier daemon on this connection gave out: it could
 * not hand out ids faster than one per nanosecond of its life. */
static uint64_t first_serial(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec + 2;
}

int node_table_init(const struct name_class *root_cls)
{
	table = cds_lfht_new(1024, 1024, 0, CDS_LFHT_AUTO_RESIZE | CDS_LFHT_ACCOUNTING, NULL);
	by_id = cds_lfht_new(1024, 1024, 0, CDS_LFHT_AUTO_RESIZE | CDS_LFHT_ACCOUNTING, NULL);
	if (!table || !by_id)
		return -ENOMEM;
	atomic_store(&next_serial, first_serial());
	/* liburcu makes call_rcu's worker thread at the first call_rcu and
	 * aborts if it cannot (no pid left below pid_max): make it now. */
	if (!get_default_call_rcu_data())
		return -EAGAIN;
	root = node_alloc(".", "");
	if (!root)
		return -ENOMEM;
	root->serial = 1;
	root->kind = NODE_ROOT;
	root->type = S_IFDIR;
	root->cls = root_cls;
	atomic_store(&root->nlookup, 1);
	return 0;
}

void node_table_destroy(void)
{
	struct cds_lfht_iter iter;
	struct cds_lfht_node *ht;

	if (!table)
		return;
	rcu_thread_register_once();
	rcu_read_lock();
	for (cds_lfht_first(table, &iter); (ht = cds_lfht_iter_get_node(&iter)); cds_lfht_next(table, &iter)) {
		struct node *n = caa_container_of(ht, struct node, by_name);

		cds_lfht_del(by_id, &n->by_id);
		if (!cds_lfht_del(table, &n->by_name))
			call_rcu(&n->rcu, node_free_rcu);
	}
	/* the unnamed ones (node_unname), in no name table any more */
	for (cds_lfht_first(by_id, &iter); (ht = cds_lfht_iter_get_node(&iter)); cds_lfht_next(by_id, &iter)) {
		struct node *n = caa_container_of(ht, struct node, by_id);

		if (!cds_lfht_del(by_id, &n->by_id) && n != root && !is_fixed(n->serial))
			call_rcu(&n->rcu, node_free_rcu);
	}
	rcu_read_unlock();
	rcu_barrier();
	cds_lfht_destroy(table, NULL);
	cds_lfht_destroy(by_id, NULL);
	table = NULL;
	by_id = NULL;
	node_free(root);
	root = NULL;
}

struct node *node_root(void)
{
	return root;
}

/* Takes a reference unless the count already reached zero (the node is on
 * its way out and must not be resurrected). */
static int get_unless_zero(struct node *n)
{
	uint64_t c = atomic_load(&n->nlookup);

	while (c != 0) {
		if (atomic_compare_exchange_weak(&n->nlookup, &c, c + 1))
			return 1;
	}
	return 0;
}

static int same_identity(const struct node *n, const struct node_identity *want)
{
	return !want || (n->kind == want->kind && n->type == (want->type & S_IFMT) &&
			 n->owner.gen == want->gen);
}

/* Duplicates of a name may be in the table at once (a node the kernel still
 * holds for an exited process beside the one for its successor): the one
 * wanted is found among them. */
struct node *node_find_get(const struct node *parent, const char *name,
			   const struct node_identity *want)
{
	struct node_key key = { parent->serial, name };
	struct cds_lfht_iter iter;
	struct cds_lfht_node *ht;
	struct node *found = NULL;

	rcu_thread_register_once();
	rcu_read_lock();
	cds_lfht_lookup(table, key_hash(key.parent_serial, name), key_match, &key, &iter);
	for (ht = cds_lfht_iter_get_node(&iter); ht;
	     cds_lfht_next_duplicate(table, key_match, &key, &iter), ht = cds_lfht_iter_get_node(&iter)) {
		struct node *n = caa_container_of(ht, struct node, by_name);

		if (same_identity(n, want) && get_unless_zero(n)) {
			found = n;
			break;
		}
	}
	rcu_read_unlock();
	return found;
}

static void node_publish(struct node *n, const struct node *parent, const struct stat *st,
			 const struct node_identity *id, const struct node_owner *owner,
			 const struct name_class *cls, uint64_t fixed_id)
{
	if (fixed_id)
		n->serial = fixed_id; /* the serial it took is not given again */
	n->parent_serial = parent->serial;
	n->kind = id->kind;
	n->type = id->type & S_IFMT;
	n->cls = cls;
	node_remember(n, st);
	n->owner = *owner;
	atomic_store(&n->nlookup, 1);
	/* Two racing lookups may both add one: each is a valid node, the
	 * kernel keeps whichever it was told last. */
	tsan_published(n);
	rcu_read_lock();
	cds_lfht_add(by_id, id_hash(n->serial), &n->by_id);
	cds_lfht_add(table, key_hash(parent->serial, n->name), &n->by_name);
	rcu_read_unlock();
}

struct node *node_get_or_insert(const struct node *parent, const char *name, const char *path,
				const struct stat *st, const struct node_identity *id,
				const struct node_owner *owner, const struct name_class *cls,
				uint64_t fixed_id)
{
	static pthread_mutex_t fixed_lock = PTHREAD_MUTEX_INITIALIZER;
	struct node *n;

	if (fixed_id) /* one node per fixed id: lookups and the resolver may race */
		pthread_mutex_lock(&fixed_lock);
	n = node_find_get(parent, name, id);
	if (!n && (n = node_alloc(path, name)))
		node_publish(n, parent, st, id, owner, cls, fixed_id);
	if (fixed_id)
		pthread_mutex_unlock(&fixed_lock);
	return n;
}

struct node *node_insert_as(const struct node *parent, const char *name, const char *path,
			    const struct stat *st, const struct node_identity *id,
			    const struct node_owner *owner, const struct name_class *cls,
			    uint64_t serial, uint64_t nlookup)
{
	struct node *n = node_alloc(path, name);
	uint64_t next = atomic_load(&next_serial);

	if (!n)
		return NULL;
	while (next <= serial && !atomic_compare_exchange_weak(&next_serial, &next, serial + 1))
		;
	node_publish(n, parent, st, id, owner, cls, serial);
	atomic_store(&n->nlookup, nlookup);
	return n;
}

void node_for_each(void (*fn)(const struct node *n, void *arg), void *arg)
{
	struct cds_lfht_iter iter;
	struct cds_lfht_node *ht;

	rcu_thread_register_once();
	rcu_read_lock();
	/* not cds_lfht_for_each_entry: its last step offsets a NULL pointer */
	for (cds_lfht_first(by_id, &iter); (ht = cds_lfht_iter_get_node(&iter)); cds_lfht_next(by_id, &iter)) {
		const struct node *n = caa_container_of(ht, struct node, by_id);

		if (!is_fixed(n->serial))
			fn(n, arg);
	}
	rcu_read_unlock();
}

/* Concurrent getattrs of one node remember at once while others read (see
 * node_recall): each field is stored and loaded whole. */
void node_remember(struct node *n, const struct stat *st)
{
	__atomic_store_n(&n->mode, st->st_mode, __ATOMIC_RELAXED);
	__atomic_store_n(&n->uid, st->st_uid, __ATOMIC_RELAXED);
	__atomic_store_n(&n->gid, st->st_gid, __ATOMIC_RELAXED);
	__atomic_store_n(&n->nlink, (unsigned)st->st_nlink, __ATOMIC_RELAXED);
	__atomic_store_n(&n->ino, st->st_ino, __ATOMIC_RELAXED);
}

void node_recall(const struct node *n, struct stat *st)
{
	st->st_mode = __atomic_load_n(&n->mode, __ATOMIC_RELAXED);
	st->st_uid = __atomic_load_n(&n->uid, __ATOMIC_RELAXED);
	st->st_gid = __atomic_load_n(&n->gid, __ATOMIC_RELAXED);
	st->st_nlink = __atomic_load_n(&n->nlink, __ATOMIC_RELAXED);
	st->st_ino = __atomic_load_n(&n->ino, __ATOMIC_RELAXED);
}

void node_forget(struct node *n, uint64_t count)
{
	if (n == root || is_fixed(n->serial)) /* they live as long as the table */
		return;
	if (atomic_fetch_sub(&n->nlookup, count) != count)
		return;
	rcu_thread_register_once();
	rcu_read_lock();
	cds_lfht_del(by_id, &n->by_id);
	/* unnamed: whichever of node_unname and this comes second frees it */
	if (!cds_lfht_del(table, &n->by_name) || atomic_exchange(&n->unnamed, 2) == 1)
		call_rcu(&n->rcu, node_free_rcu);
	rcu_read_unlock();
}

void node_unname(struct node *n)
{
	if (n == root || is_fixed(n->serial))
		return;
	rcu_thread_register_once();
	rcu_read_lock();
	if (!cds_lfht_del(table, &n->by_name) && atomic_exchange(&n->unnamed, 1) == 2)
		call_rcu(&n->rcu, node_free_rcu);
	rcu_read_unlock();
}

/* Freed nodes stay in glibc's per-thread arenas; once many are gone (a big
 * process exited), give the memory back so the daemon returns to its idle
 * size. */
void node_table_trim(void)
{
	static long trimmed_at;
	long now = node_count();

	if (trimmed_at - now > 1000)
		malloc_trim(0);
	if (now < trimmed_at - 1000 || now > trimmed_at)
		trimmed_at = now;
}

long node_count(void)
{
	return atomic_load(&live_nodes);
}

size_t node_child_pids(const struct node *parent, pid_t **pids)
{
	struct cds_lfht_iter iter;
	struct cds_lfht_node *ht;
	size_t n = 0, cap = 0;
	pid_t *out = NULL, *more;

	rcu_thread_register_once();
	rcu_read_lock();
	for (cds_lfht_first(table, &iter); (ht = cds_lfht_iter_get_node(&iter));
	     cds_lfht_next(table, &iter)) {
		const struct node *c = caa_container_of(ht, struct node, by_name);
		char *end;
		long pid;

		tsan_found(c);
		if (c->parent_serial != parent->serial || !isdigit((unsigned char)c->name[0]))
			continue;
		pid = strtol(c->name, &end, 10);
		if (*end || pid <= 0 || pid > INT_MAX)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 256;
			if (!(more = realloc(out, cap * sizeof(*out))))
				break; /* as many as memory allows */
			out = more;
		}
		out[n++] = (pid_t)pid;
	}
	rcu_read_unlock();
	*pids = out;
	return n;
}
