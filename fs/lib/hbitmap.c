#include "fs/lib/hbitmap.h"

static inline uint64_t load(const _Atomic uint64_t *w)
{
	return atomic_load_explicit(w, memory_order_acquire);
}

void hbitmap_set(struct hbitmap *b, uint32_t bit)
{
	if (bit >= HBITMAP_BITS)
		return;
	uint32_t w0 = bit / 64, w1 = w0 / 64, w2 = w1 / 64;

	atomic_fetch_or_explicit(&b->l0[w0], 1ULL << (bit % 64), memory_order_release);
	atomic_fetch_or_explicit(&b->l1[w1], 1ULL << (w0 % 64), memory_order_release);
	atomic_fetch_or_explicit(&b->l2[w2], 1ULL << (w1 % 64), memory_order_release);
}

void hbitmap_clear(struct hbitmap *b, uint32_t bit)
{
	if (bit >= HBITMAP_BITS)
		return;
	uint32_t w0 = bit / 64, w1 = w0 / 64, w2 = w1 / 64;

	if (atomic_fetch_and_explicit(&b->l0[w0], ~(1ULL << (bit % 64)), memory_order_release) !=
	    1ULL << (bit % 64))
		return; /* the word still has other bits */
	if (atomic_fetch_and_explicit(&b->l1[w1], ~(1ULL << (w0 % 64)), memory_order_release) ==
	    1ULL << (w0 % 64))
		atomic_fetch_and_explicit(&b->l2[w2], ~(1ULL << (w1 % 64)), memory_order_release);
}

int hbitmap_test(const struct hbitmap *b, uint32_t bit)
{
	return bit < HBITMAP_BITS && (load(&b->l0[bit / 64]) >> (bit % 64)) & 1;
}

/* First set bit at or after position pos within one level's word array,
 * given that level's words; -1 if none in the word holding pos. */
static int64_t in_word(uint64_t word, uint32_t pos)
{
	uint64_t masked = word & (~0ULL << (pos % 64));

	return masked ? (int64_t)(pos - pos % 64) + __builtin_ctzll(masked) : -1;
}

int64_t hbitmap_next(const struct hbitmap *b, uint32_t from)
{
	uint32_t pos = from;

	while (pos < HBITMAP_BITS) {
		uint32_t w0 = pos / 64, w1 = w0 / 64, w2 = w1 / 64;
		int64_t hit = in_word(load(&b->l0[w0]), pos);

		if (hit >= 0)
			return hit;
		/* Next non-empty leaf word after w0, through the summaries. */
		int64_t n0 = w0 % 64 == 63 ? -1 : in_word(load(&b->l1[w1]), w0 + 1);
		if (n0 < 0) {
			int64_t n1 = w1 % 64 == 63 ? -1 : in_word(load(&b->l2[w2]), w1 + 1);
			if (n1 < 0) {
				int64_t n2 = -1;

				for (uint32_t w = w2 + 1; w < HBITMAP_L2 && n2 < 0; w++)
					if (load(&b->l2[w]))
						n2 = w;
				if (n2 < 0)
					return -1;
				n1 = (int64_t)n2 * 64 + __builtin_ctzll(load(&b->l2[n2]));
			}
			uint64_t l1w = load(&b->l1[n1]);
			if (!l1w) { /* emptied meanwhile: continue past it */
				pos = (uint32_t)(n1 + 1) * 64 * 64;
				continue;
			}
			n0 = n1 * 64 + __builtin_ctzll(l1w);
		}
		pos = (uint32_t)n0 * 64;
	}
	return -1;
}
