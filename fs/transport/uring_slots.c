/* The ring entries' buffers, shared by every server of a mount (uring_slots.h). */
#include "fs/transport/uring_slots.h"

#include <errno.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* A memfd's first page: where its servers map it, and the slots' shape. */
struct shared_head {
	uint64_t magic;
	uint64_t addr;
	uint32_t queues, per_queue;
	uint32_t conn_rings; /* enum conn_rings; 0 in a release's before */
};

#define SHARED_MAGIC 0x73676e6972667063ULL /* "cpfrings" */
#define SHARED_HEAD_SIZE 4096
/* 32 TiB: far below the binary, its heap and the libraries, above
 * AddressSanitizer's shadow, on a 47-bit address space, so that a server
 * executed after a dead one finds the place its predecessor chose still free.
 * Only a hint: where it is taken, the kernel chooses. */
#define SHARED_HINT ((void *)((uintptr_t)1 << 45))

static struct shared_head *head; /* the mapping's first page */
static struct uring_slot *slots;
static unsigned queues, per_queue;

static void take(void *m, unsigned nqueues, unsigned per)
{
	head = m;
	slots = (struct uring_slot *)((char *)m + SHARED_HEAD_SIZE);
	queues = nqueues;
	per_queue = per;
}

int uring_slots_memfd(void)
{
	return memfd_create("procfast-rings", MFD_CLOEXEC);
}

int uring_slots_reserve(unsigned nqueues, unsigned per)
{
	void *m;

	if (slots)
		return 0;
	/* Shared, so that a server forked after a dead one sees what the kernel
	 * wrote there for it; anonymous memory is zero: every slot empty. */
	m = mmap(NULL, SHARED_HEAD_SIZE + (size_t)nqueues * per * sizeof(*slots),
		 PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return -errno;
	take(m, nqueues, per);
	return 0;
}

/* The first server of the memfd: it is zero, every slot empty. */
static void *lay_out(int fd, size_t len, unsigned nqueues, unsigned per)
{
	struct shared_head *h;
	void *m;

	if (ftruncate(fd, (off_t)len))
		return MAP_FAILED;
	m = mmap(SHARED_HINT, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		return m;
	h = m;
	*h = (struct shared_head){ .addr = (uintptr_t)m, .queues = nqueues, .per_queue = per };
	/* last: a server that dies before this leaves a file laid out afresh */
	__atomic_store_n(&h->magic, SHARED_MAGIC, __ATOMIC_RELEASE);
	return m;
}

/* The kernel keeps the addresses that its entries were registered with: a
 * later server must have the slots where the first one had them. */
static void *map_again(int fd, size_t len, const struct shared_head *found)
{
	void *want = (void *)(uintptr_t)found->addr;
	void *m = mmap(want, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED_NOREPLACE, fd, 0);

	if (m != MAP_FAILED && m != want) { /* a kernel that took it for a hint */
		munmap(m, len);
		errno = EEXIST;
		return MAP_FAILED;
	}
	return m;
}

int uring_slots_share(int fd, unsigned nqueues, unsigned per)
{
	size_t len = SHARED_HEAD_SIZE + (size_t)nqueues * per * sizeof(*slots);
	struct shared_head found = { 0 };
	struct stat st;
	char *m;

	if (slots)
		return 0;
	if (fstat(fd, &st))
		return -errno;
	if (st.st_size && pread(fd, &found, sizeof(found), 0) != sizeof(found))
		return -EIO;
	if (found.magic != SHARED_MAGIC)
		m = lay_out(fd, len, nqueues, per);
	else if ((size_t)st.st_size != len || found.queues != nqueues || found.per_queue != per)
		return -EINVAL;
	else
		m = map_again(fd, len, &found);
	if (m == MAP_FAILED)
		return -errno;
	take(m, nqueues, per);
	return 0;
}

void uring_slots_set_conn_rings(enum conn_rings used)
{
	if (head)
		__atomic_store_n(&head->conn_rings, (uint32_t)used, __ATOMIC_RELEASE);
}

enum conn_rings uring_slots_conn_rings(void)
{
	return head ? (enum conn_rings)__atomic_load_n(&head->conn_rings, __ATOMIC_ACQUIRE)
		    : CONN_RINGS_UNKNOWN;
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
