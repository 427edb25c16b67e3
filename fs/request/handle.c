/* Tokens for the handles the kernel holds.
 *
 * The kernel keeps fi->fh across a server restart and hands it to the next
 * server with the node id. Node ids are never reused, so a handle on an
 * ordinary node of an earlier server is refused with its node (request.h);
 * but the fixed ids (cache/nodes/node.h) outlive servers, and a handle on one
 * must not be taken for an address here. A token is a random per-server
 * base plus a count: the next server's tokens meet an earlier one's with
 * negligible odds, and the table below says which are this server's. */
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/random.h>
#include <unistd.h>

#include "fs/request/handle.h"
#include "cache/nodes/node.h" /* urcu and rculfhash, and registering threads */
#include "fs/lib/tsan.h"

struct handle {
	struct cds_lfht_node by_token;
	uint64_t token;
	void *obj;
	const struct node *node; /* what it is open on */
	struct rcu_head rcu;
};

static struct cds_lfht *tokens;
static uint64_t token_base;
static atomic_uint_fast64_t tokens_given;
static pthread_once_t tokens_once = PTHREAD_ONCE_INIT;

static void tokens_init(void)
{
	if (getrandom(&token_base, sizeof(token_base), 0) != sizeof(token_base))
		token_base = (uint64_t)(uintptr_t)&token_base ^ (uint64_t)getpid() << 32;
	tokens = cds_lfht_new(256, 256, 0, CDS_LFHT_AUTO_RESIZE | CDS_LFHT_ACCOUNTING, NULL);
	if (!tokens)
		abort(); /* at the first open, before any reply: nothing to serve with */
}

static unsigned long token_hash(uint64_t token)
{
	return (unsigned long)(token * 0x9e3779b97f4a7c15ull >> 16);
}

static int token_match(struct cds_lfht_node *ht_node, const void *key)
{
	struct handle *h = caa_container_of(ht_node, struct handle, by_token);

	tsan_found(h);
	return h->token == *(const uint64_t *)key;
}

/* Makes token name obj unless it names something already; returns what it
 * names (NULL: memory is short). */
static void *add_unique(uint64_t token, void *obj, const struct node *n)
{
	struct handle *h = malloc(sizeof(*h)), *there;
	struct cds_lfht_node *ht;
	void *named;

	if (!h)
		return NULL;
	h->token = token;
	h->obj = obj;
	h->node = n;
	tsan_published(h);
	rcu_read_lock();
	ht = cds_lfht_add_unique(tokens, token_hash(token), token_match, &token, &h->by_token);
	there = caa_container_of(ht, struct handle, by_token);
	named = there->obj;
	rcu_read_unlock();
	if (there != h)
		free(h);
	return named;
}

static void tokens_ready(void)
{
	pthread_once(&tokens_once, tokens_init);
	rcu_thread_register_once();
}

uint64_t handle_give(void *obj, const struct node *n)
{
	uint64_t token;
	void *named;

	tokens_ready();
	do { /* 0 is the root's (dir.c); a taken one was adopted from before */
		token = token_base + atomic_fetch_add(&tokens_given, 1);
		if (token && !(named = add_unique(token, obj, n)))
			return 0;
	} while (!token || named != obj);
	return token;
}

static struct handle *find(uint64_t token)
{
	struct cds_lfht_iter iter;
	struct cds_lfht_node *ht;

	cds_lfht_lookup(tokens, token_hash(token), token_match, &token, &iter);
	ht = cds_lfht_iter_get_node(&iter);
	return ht ? caa_container_of(ht, struct handle, by_token) : NULL;
}

void *handle_find(uint64_t token)
{
	struct handle *h;
	void *obj;

	tokens_ready();
	rcu_read_lock();
	h = find(token);
	obj = h ? h->obj : NULL;
	rcu_read_unlock();
	return obj;
}

int handle_fd(uint64_t token)
{
	const struct handle_head *obj = handle_find(token);

	return obj ? obj->fd : -1;
}

void *handle_adopt(uint64_t token, void *obj, const struct node *n)
{
	tokens_ready();
	return add_unique(token, obj, n);
}

void handle_for_each_node(void (*fn)(const struct node *n, void *arg), void *arg)
{
	struct cds_lfht_iter iter;
	struct cds_lfht_node *ht;

	tokens_ready();
	rcu_read_lock();
	for (cds_lfht_first(tokens, &iter); (ht = cds_lfht_iter_get_node(&iter));
	     cds_lfht_next(tokens, &iter)) {
		const struct handle *h = caa_container_of(ht, struct handle, by_token);

		tsan_found(h);
		fn(h->node, arg);
	}
	rcu_read_unlock();
}

static void handle_free_rcu(struct rcu_head *head)
{
	free(caa_container_of(head, struct handle, rcu));
}

void *handle_drop(uint64_t token)
{
	struct handle *h;
	void *obj = NULL;

	tokens_ready();
	rcu_read_lock();
	h = find(token);
	if (h && !cds_lfht_del(tokens, &h->by_token)) {
		obj = h->obj;
		call_rcu(&h->rcu, handle_free_rcu);
	}
	rcu_read_unlock();
	return obj;
}
