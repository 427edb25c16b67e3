#include "cache/link_hints.h"

#include <stdatomic.h>

#define HINT_SLOTS 4096

struct hint_slot {
	_Atomic uint64_t key;
	_Atomic int fd;
};

static struct hint_slot slots[HINT_SLOTS];

static uint64_t hint_key(uint64_t dir_uid, const char *text)
{
	uint64_t h = 1469598103934665603ULL ^ (dir_uid * 0x9e3779b97f4a7c15ULL);

	for (const unsigned char *p = (const unsigned char *)text; *p; p++)
		h = (h ^ *p) * 1099511628211ULL;
	return h | 1; /* 0 marks an empty slot */
}

void link_hint_put(uint64_t dir_uid, const char *text, int fd)
{
	uint64_t key = hint_key(dir_uid, text);
	struct hint_slot *s = &slots[key % HINT_SLOTS];

	atomic_store_explicit(&s->fd, fd, memory_order_relaxed);
	atomic_store_explicit(&s->key, key, memory_order_release);
}

int link_hint_get(uint64_t dir_uid, const char *text)
{
	uint64_t key = hint_key(dir_uid, text);
	struct hint_slot *s = &slots[key % HINT_SLOTS];

	if (atomic_load_explicit(&s->key, memory_order_acquire) != key)
		return -1;
	return atomic_load_explicit(&s->fd, memory_order_relaxed);
}
