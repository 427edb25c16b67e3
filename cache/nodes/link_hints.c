#include "cache/nodes/link_hints.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Per thread: SHARDS open-addressed tables keyed by tid, each grown when
 * half full. A rebuild keeps the hints put in the last HINT_TTL_MS and sizes
 * the table for them, so memory follows the threads that read links, not
 * the machine's history of tids. A table at SHARD_MAX (more than
 * SHARDS * SHARD_MAX / 2 threads read links within HINT_TTL_MS) rebuilds at
 * most once a second and otherwise replaces the oldest hint of a probe
 * window (a hint put in the same millisecond only if all of them were):
 * lossy then, never slow. Probes stop after PROBE_MAX slots. */
#define SHARDS 16
#define SHARD_MIN 16u
#define SHARD_MAX (1u << 14)
#define PROBE_MAX 32u
#define HINT_TTL_MS 10000u
#define ANON_SLOTS 1024u

struct hint {
	uint64_t key;    /* the tid; in the anonymous table, of dir and text; 0: empty */
	uint64_t dir;
	uint64_t text;   /* hash of the text */
	uint32_t stamp;  /* coarse monotonic milliseconds of the put (wrapping) */
	char entry[LINK_HINT_NAME_MAX];
};

struct shard {
	pthread_mutex_t lock;
	struct hint *slot;
	uint32_t cap;       /* a power of two, or 0 before the first put */
	uint32_t used;      /* slots with a key, expired ones included */
	uint32_t rebuilt_at; /* in seconds */
} __attribute__((aligned(64)));

static struct shard shards[SHARDS] = {
	[0 ... SHARDS - 1] = { .lock = PTHREAD_MUTEX_INITIALIZER },
};

/* Callers without a tid: direct-mapped by directory and text. */
static pthread_mutex_t anon_lock = PTHREAD_MUTEX_INITIALIZER;
static struct hint anon[ANON_SLOTS];

static uint64_t text_hash(const char *text)
{
	uint64_t h = 1469598103934665603ULL;

	for (const unsigned char *p = (const unsigned char *)text; *p; p++)
		h = (h ^ *p) * 1099511628211ULL;
	return h;
}

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	return x ^ (x >> 33);
}

static uint32_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint32_t)((uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000);
}

static int expired(const struct hint *h, uint32_t now)
{
	return now - h->stamp >= HINT_TTL_MS;
}

/* The slot of key in s, or the first empty one of its probe window, or NULL. */
static struct hint *probe(struct hint *slot, uint32_t cap, uint64_t key, uint32_t start)
{
	for (uint32_t i = 0; i < cap && i < PROBE_MAX; i++) {
		struct hint *h = &slot[(start + i) & (cap - 1)];

		if (!h->key || h->key == key)
			return h;
	}
	return NULL;
}

static void rebuild(struct shard *s, uint64_t (*start_of)(uint64_t), uint32_t now)
{
	uint32_t live = 0, cap = SHARD_MIN;
	struct hint *slot;

	for (uint32_t i = 0; i < s->cap; i++)
		live += s->slot[i].key && !expired(&s->slot[i], now);
	while (cap < SHARD_MAX && cap < (live + 1) * 4)
		cap *= 2;
	if (!(slot = calloc(cap, sizeof(*slot))))
		return; /* the old table serves on */
	s->used = 0;
	for (uint32_t i = 0; i < s->cap; i++) {
		struct hint *h = &s->slot[i], *to;

		if (!h->key || expired(h, now))
			continue;
		to = probe(slot, cap, h->key, (uint32_t)start_of(h->key));
		if (to) { /* else dropped: a probe window full after a rebuild */
			*to = *h;
			s->used++;
		}
	}
	free(s->slot);
	s->slot = slot;
	s->cap = cap;
	s->rebuilt_at = now / 1000;
}

static uint64_t tid_start(uint64_t key)
{
	return mix(key) >> 32;
}

static struct shard *shard_of(pid_t tid)
{
	return &shards[mix((uint64_t)tid) >> 60];
}

/* The oldest hint of key's probe window, to give way. */
static struct hint *oldest(struct shard *s, uint32_t start)
{
	struct hint *old = &s->slot[start & (s->cap - 1)];

	for (uint32_t i = 1; i < s->cap && i < PROBE_MAX; i++) {
		struct hint *h = &s->slot[(start + i) & (s->cap - 1)];

		if ((int32_t)(h->stamp - old->stamp) < 0)
			old = h;
	}
	return old;
}

static void fill(struct hint *h, uint64_t key, uint64_t dir, uint64_t text, uint32_t now,
		 const char *entry)
{
	h->key = key;
	h->dir = dir;
	h->text = text;
	h->stamp = now;
	strcpy(h->entry, entry);
}

void link_hint_put(pid_t tid, uint64_t dir, const char *entry, const char *text)
{
	uint64_t th = text_hash(text);
	uint32_t now = now_ms(), start;
	struct shard *s;
	struct hint *h;

	if (strlen(entry) >= LINK_HINT_NAME_MAX)
		return;
	if (tid <= 0) {
		uint64_t key = mix(dir ^ th) | 1;

		pthread_mutex_lock(&anon_lock);
		fill(&anon[key % ANON_SLOTS], key, dir, th, now, entry);
		pthread_mutex_unlock(&anon_lock);
		return;
	}
	s = shard_of(tid);
	start = (uint32_t)tid_start((uint64_t)tid);
	pthread_mutex_lock(&s->lock);
	h = s->cap ? probe(s->slot, s->cap, (uint64_t)tid, start) : NULL;
	if (!h || !h->key) { /* a new thread: room for one more? */
		if (!s->cap || (s->used + 1) * 2 > s->cap) {
			if (s->cap < SHARD_MAX || s->rebuilt_at != now / 1000)
				rebuild(s, tid_start, now);
			h = s->cap ? probe(s->slot, s->cap, (uint64_t)tid, start) : NULL;
		}
		if (!h && s->cap)
			h = oldest(s, start);
		if (h && !h->key)
			s->used++;
	}
	if (h)
		fill(h, (uint64_t)tid, dir, th, now, entry);
	pthread_mutex_unlock(&s->lock);
}

static int found(const struct hint *h, uint64_t key, uint64_t dir, uint64_t text, char *entry)
{
	if (!h || h->key != key || h->dir != dir || h->text != text)
		return -ENOENT;
	strcpy(entry, h->entry);
	return 0;
}

int link_hint_get(pid_t tid, uint64_t dir, const char *text, char *entry)
{
	uint64_t th = text_hash(text);
	struct shard *s;
	int r;

	if (tid <= 0) {
		uint64_t key = mix(dir ^ th) | 1;

		pthread_mutex_lock(&anon_lock);
		r = found(&anon[key % ANON_SLOTS], key, dir, th, entry);
		pthread_mutex_unlock(&anon_lock);
		return r;
	}
	s = shard_of(tid);
	pthread_mutex_lock(&s->lock);
	r = found(s->cap ? probe(s->slot, s->cap, (uint64_t)tid, (uint32_t)tid_start((uint64_t)tid))
			 : NULL,
		  (uint64_t)tid, dir, th, entry);
	pthread_mutex_unlock(&s->lock);
	return r;
}
