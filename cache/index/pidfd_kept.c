/* Pidfds kept from earlier probes (pidfd_kept.h). */
#include "cache/index/pidfd_kept.h"

#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

/* A kept fd stays this far below the fd limit at least. */
#define HEADROOM 128

struct slot {
	pthread_mutex_t lock;
	pid_t pid;
	int fd; /* -1: empty */
	uint64_t gen;
};

static struct slot *slots;
static unsigned nslots;

int pidfd_kept_init(unsigned n)
{
	if (!n)
		return 0;
	if (!(slots = calloc(n, sizeof(*slots))))
		return -1;
	for (unsigned i = 0; i < n; i++) {
		pthread_mutex_init(&slots[i].lock, NULL);
		slots[i].fd = -1;
	}
	nslots = n;
	return 0;
}

void pidfd_kept_destroy(void)
{
	for (unsigned i = 0; i < nslots; i++) {
		if (slots[i].fd >= 0)
			close(slots[i].fd);
		pthread_mutex_destroy(&slots[i].lock);
	}
	free(slots);
	slots = NULL;
	nslots = 0;
}

static struct slot *slot_of(pid_t pid)
{
	return nslots && pid > 0 ? &slots[(unsigned)pid % nslots] : NULL;
}

static void empty(struct slot *s)
{
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
	s->pid = 0;
}

int pidfd_kept_running(pid_t pid, uint64_t *gen)
{
	struct slot *s = slot_of(pid);
	int running = 0;

	if (!s)
		return 0;
	pthread_mutex_lock(&s->lock);
	if (s->fd >= 0 && s->pid == pid) {
		struct pollfd p = { .fd = s->fd, .events = POLLIN };

		if (poll(&p, 1, 0) == 0) {
			*gen = s->gen;
			running = 1;
		} else {
			empty(s);
		}
	}
	pthread_mutex_unlock(&s->lock);
	return running;
}

/* The fd limit now (a caller may lower it with prlimit at any time). */
static int far_below_limit(int fd)
{
	struct rlimit rl;

	return getrlimit(RLIMIT_NOFILE, &rl) == 0 &&
	       (rl.rlim_cur == RLIM_INFINITY || (rlim_t)fd + HEADROOM < rl.rlim_cur);
}

void pidfd_kept_put(pid_t pid, int *fd, uint64_t gen)
{
	struct slot *s = slot_of(pid);

	if (!s || !far_below_limit(*fd))
		return;
	pthread_mutex_lock(&s->lock);
	empty(s);
	s->pid = pid;
	s->fd = *fd;
	s->gen = gen;
	pthread_mutex_unlock(&s->lock);
	*fd = -1;
}

unsigned pidfd_kept_count(void)
{
	unsigned n = 0;

	for (unsigned i = 0; i < nslots; i++) {
		pthread_mutex_lock(&slots[i].lock);
		n += slots[i].fd >= 0;
		pthread_mutex_unlock(&slots[i].lock);
	}
	return n;
}
