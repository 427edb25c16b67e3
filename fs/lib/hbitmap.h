/* A hierarchical bitmap over the pid space (0 .. 2^22-1, the kernel's
 * PID_MAX_LIMIT): 64-bit words of bits, a summary word-bit per non-empty
 * word, and a summary of summaries. Finding the next set bit from any
 * position costs a few word reads per level plus one per set bit visited,
 * however sparse the set is.
 *
 * One writer, any number of readers without locks: the writer sets the leaf
 * bit before its summary bits and clears summaries only after the leaf word
 * became empty, so a reader may miss a bit being set concurrently (it was
 * not there when the reader started) but never one that was set before.
 */
#ifndef PROCFAST_HBITMAP_H
#define PROCFAST_HBITMAP_H

#include <stdatomic.h>
#include <stdint.h>

#define HBITMAP_BITS (1u << 22)
#define HBITMAP_L0 (HBITMAP_BITS / 64)   /* 65536 leaf words */
#define HBITMAP_L1 (HBITMAP_L0 / 64)     /* 1024 words */
#define HBITMAP_L2 (HBITMAP_L1 / 64)     /* 16 words */

struct hbitmap {
	_Atomic uint64_t l2[HBITMAP_L2];
	_Atomic uint64_t l1[HBITMAP_L1];
	_Atomic uint64_t l0[HBITMAP_L0];
};

/* Writer side (one thread at a time). */
void hbitmap_set(struct hbitmap *b, uint32_t bit);
void hbitmap_clear(struct hbitmap *b, uint32_t bit);

/* Reader side. */
int hbitmap_test(const struct hbitmap *b, uint32_t bit);
/* The first set bit >= from, or -1. */
int64_t hbitmap_next(const struct hbitmap *b, uint32_t from);

#endif
