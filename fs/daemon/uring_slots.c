/* The ring entries' buffers, shared by every server of a mount (uring_slots.h). */
#include "fs/daemon/uring_slots.h"

#include <errno.h>
#include <stddef.h>
#include <sys/mman.h>

static struct uring_slot *slots;
static unsigned queues, per_queue;

int uring_slots_reserve(unsigned nqueues, unsigned per)
{
	void *m;

	if (slots)
		return 0;
	/* Shared, so that a server forked after a dead one sees what the kernel
	 * wrote there for it; anonymous memory is zero: every slot empty. */
	m = mmap(NULL, (size_t)nqueues * per * sizeof(*slots), PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return -errno;
	slots = m;
	queues = nqueues;
	per_queue = per;
	return 0;
}

unsigned uring_slots_queues(void)
{
	return queues;
}

unsigned uring_slots_per_queue(void)
{
	return per_queue;
}

struct uring_slot *uring_slot_at(unsigned qid, unsigned index)
{
	return &slots[(size_t)qid * per_queue + index];
}

/* The kernel writes commit_id when it hands the entry a request; a server
 * zeroes it when it writes the reply, and keeps in taken the request it works
 * on until the commit has gone in. */
enum slot_left uring_slot_left(struct uring_slot *s, uint64_t *commit_id)
{
	uint64_t posted = s->hdr.ring_ent_in_out.commit_id;
	uint64_t taken = atomic_load(&s->taken);

	*commit_id = posted ? posted : taken;
	if (posted && posted != taken)
		return SLOT_POSTED;
	if (posted)
		return SLOT_TAKEN;
	return taken ? SLOT_ANSWERED : SLOT_EMPTY;
}
