/* The counters of each caller's shares (fs/caller/shares.c) and the shares the
 * daemon makes from its fd limit and threads (fair_limits_of, fs/caller/fair.c).
 *
 * The input is a header and a sequence of steps, each a take or a release
 * for one of 16 keys (uids: 0, 65534, 2^32 - 1, keys whose hashes meet...)
 * under a limit the step gives, on a table small enough that windows fill:
 *  - a take succeeds only while its key holds fewer than the step's limit,
 *    fails at the limit exactly, and finds no slot (untracked) only for a
 *    key that holds nothing, whose whole window holds other keys' counts;
 *  - after every step each key holds what its tickets say, the table in all
 *    what all tickets say (never below 0: a release of a ticket given back
 *    already changes nothing);
 *  - once every ticket is given back, the table holds nothing.
 * With the header's bit 0x80, four threads run the steps at once (each from
 * its own offset) against one table, and a count kept beside it checks that
 * no key ever holds more than the limit; at the end the table holds nothing.
 * The header's last bytes are also a configuration whose limits must hold
 * what fs/caller/fair.h says. */
#include <assert.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fs/caller/fair.h"
#include "fs/caller/shares.h"

#define KEYS 16
#define MAX_TICKETS 4096
#define THREADS 4

static const uint32_t keys[KEYS] = {
	0, 1, 2, 3, 65534, 65535, 100000, 165536, 0xfffffffeu, 0xffffffffu,
	0xf0000000u, 0xf0000001u, 0xeffffffcu, 1u << 31, 8, 16,
};

struct ticket {
	int key;
	int ticket;
};

static uint32_t limit_of(uint8_t b, uint32_t base)
{
	/* mostly the run's limit; sometimes lower or higher for one step */
	switch (b >> 6) {
	case 0:
		return base / 2;
	case 1:
		return base + 1;
	default:
		return base;
	}
}

static void sequential(struct shares *s, const uint8_t *data, size_t size, uint32_t base)
{
	static struct ticket held[MAX_TICKETS];
	uint32_t model[KEYS] = { 0 };
	uint64_t all = 0;
	size_t n = 0;

	for (size_t i = 0; i + 1 < size; i += 2) {
		int k = data[i] & (KEYS - 1);
		uint32_t limit = limit_of(data[i + 1], base);

		if ((data[i] & 0x10) || !n) { /* take */
			int room = shares_room_for(s, keys[k]);
			int t = shares_take(s, keys[k], limit);

			if (t >= 0) {
				assert(model[k] < limit);
				assert(n < MAX_TICKETS);
				held[n++] = (struct ticket){ k, t };
				model[k]++;
				all++;
			} else if (t == SHARES_FULL) {
				assert(model[k] >= limit);
			} else {
				assert(t == SHARES_UNTRACKED);
				assert(!room && model[k] == 0 && !shares_room_for(s, keys[k]));
			}
		} else { /* release one, picked by the step */
			size_t j = data[i + 1] % n;
			int k2 = held[j].key;

			shares_release(s, held[j].ticket);
			model[k2]--;
			all--;
			held[j] = held[--n];
		}
		for (int q = 0; q < KEYS; q++)
			assert(shares_held(s, keys[q]) == model[q]);
		assert(shares_total(s) == all);
	}
	while (n) {
		shares_release(s, held[--n].ticket);
		/* twice (a caller's mistake): a count never goes below 0 */
		if (data[0] & 1)
			shares_release(s, held[n].ticket);
	}
	assert(shares_total(s) == 0);
	for (int q = 0; q < KEYS; q++)
		assert(shares_held(s, keys[q]) == 0);
}

struct run {
	struct shares *s;
	const uint8_t *data;
	size_t size, start;
	uint32_t limit;
	atomic_uint *model; /* what each key holds, beside the table */
};

static void *concurrent(void *arg)
{
	struct run *r = arg;
	struct ticket held[64];
	int n = 0;

	for (size_t step = 0; step < 4 * r->size; step++) {
		uint8_t b = r->data[(r->start + step) % r->size];
		int k = b & 7; /* fewer keys: more meet */

		if ((b & 0x10) && n < 64) {
			int t = shares_take(r->s, keys[k], r->limit);

			if (t >= 0) {
				assert(atomic_fetch_add(&r->model[k], 1) + 1 <= r->limit);
				held[n++] = (struct ticket){ k, t };
			}
		} else if (n) {
			int j = b % n;

			atomic_fetch_sub(&r->model[held[j].key], 1);
			shares_release(r->s, held[j].ticket);
			held[j] = held[--n];
		}
	}
	while (n--) {
		atomic_fetch_sub(&r->model[held[n].key], 1);
		shares_release(r->s, held[n].ticket);
	}
	return NULL;
}

static void threaded(struct shares *s, const uint8_t *data, size_t size, uint32_t limit)
{
	atomic_uint model[KEYS];
	pthread_t t[THREADS];
	struct run r[THREADS];

	if (!size)
		return;
	for (int k = 0; k < KEYS; k++)
		atomic_init(&model[k], 0);
	for (int i = 0; i < THREADS; i++) {
		r[i] = (struct run){ s, data, size, (size_t)i * size / THREADS, limit, model };
		assert(!pthread_create(&t[i], NULL, concurrent, &r[i]));
	}
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	assert(shares_total(s) == 0);
}

/* fair_limits_of on a configuration from the input. */
static void limits(const uint8_t *h)
{
	struct fair_config c = { 0 };
	struct fair_limits l;
	unsigned long fds;

	c.fd_limit = (unsigned long)h[0] << 16 | (unsigned long)h[1] << 8 | h[2];
	c.handles_per_uid = h[3] & 1 ? h[4] : 0;
	c.handles_per_container = h[3] & 2 ? h[5] : 0;
	c.busy_per_uid = h[3] & 4 ? h[6] : 0;
	c.fuse_workers = 1 + h[7];
	c.ring_threads = 1 + (h[8] & 63);
	c.ring_queues = h[3] & 8 ? 1 + h[9] : 0;
	fair_limits_of(&c, &l);
	fds = c.fd_limit;
	assert(l.fd_reserve <= fds / 2);
	assert(l.fd_reserve == fds / 2 || l.fd_reserve >= FAIR_RESERVE_MIN);
	assert(l.fd_reserve >= fds / FAIR_RESERVE_DIVISOR || l.fd_reserve == fds / 2);
	assert(l.handles >= 1 && (fds - l.fd_reserve < 1 || l.handles == fds - l.fd_reserve));
	assert(l.handles_per_uid >= 1 && l.handles_per_container >= 1);
	assert(c.handles_per_uid ? l.handles_per_uid == c.handles_per_uid
				 : l.handles_per_uid <= l.handles);
	assert(c.handles_per_container ? l.handles_per_container == c.handles_per_container
				       : l.handles_per_container <= l.handles);
	/* the default busy shares leave threads to others where there are two */
	assert(l.busy_per_uid_fuse >= 1 && l.busy_per_uid_ring >= 1);
	if (!c.busy_per_uid) {
		assert(c.fuse_workers < 2 || l.busy_per_uid_fuse < c.fuse_workers);
		assert(c.ring_threads < 2 || l.busy_per_uid_ring < c.ring_threads);
	} else {
		assert(l.busy_per_uid_fuse == c.busy_per_uid && l.busy_per_uid_ring == c.busy_per_uid);
	}
}

#define HEADER 12

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct shares *s;
	uint32_t limit;

	if (size < HEADER)
		return 0;
	limits(data + 2);
	/* 8 to 256 slots: windows (32) fill with 16 keys in the small ones */
	s = shares_new(8u << (data[0] & 7) % 6);
	assert(s);
	limit = data[1] % 24; /* 0 too: every take fails */
	if (data[0] & 0x80)
		threaded(s, data + HEADER, size - HEADER, limit);
	else
		sequential(s, data + HEADER, size - HEADER, limit);
	shares_free(s);
	return 0;
}
