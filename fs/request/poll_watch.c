/* The watches of pollers (poll_watch.h).
 *
 * A watch is a slot of one table, under one lock, named in its epoll
 * registration by slot and serial: an event that comes after its watch was
 * dropped or replaced (epoll_wait returned it before the lock was taken)
 * names a serial the slot no longer has, and is ignored. */
#include "fs/request/poll_watch.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "fs/lib/log.h"

#define EVENTS_A_WAIT 64
#define STOP_DATA UINT64_MAX

struct watch {
	uint32_t serial; /* 0: free */
	int fd;
	struct fuse_pollhandle *ph; /* NULL once notified: disarmed */
	uint32_t fired;             /* what epoll reported, for the next POLL */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct watch *table;
static uint32_t slots, next_serial;
static int epfd = -1, stopfd = -1;
static pthread_t watcher;
static int watching;       /* the thread runs */
static int taking_watches; /* arms are taken: from the start until the stop */

static uint64_t data_of(uint32_t slot, uint32_t serial)
{
	return (uint64_t)slot << 32 | serial;
}

/* The watch ref names, or NULL: with the lock held. */
static struct watch *found(const struct poll_watch_ref *ref)
{
	if (!ref->serial || ref->slot >= slots || table[ref->slot].serial != ref->serial)
		return NULL;
	return &table[ref->slot];
}

static void notify(struct watch *w)
{
	if (!w->ph)
		return;
	fuse_lowlevel_notify_poll(w->ph);
	fuse_pollhandle_destroy(w->ph);
	w->ph = NULL;
}

/* A free slot, the table grown if none: its index, or -1. */
static long free_slot(void)
{
	uint32_t first_new = slots, n = slots ? 2 * slots : 64;
	struct watch *grown;

	for (uint32_t i = 0; i < slots; i++)
		if (!table[i].serial)
			return i;
	if (!(grown = realloc(table, n * sizeof(*table))))
		return -1;
	for (uint32_t i = slots; i < n; i++)
		grown[i] = (struct watch){ 0, -1, NULL, 0 };
	table = grown;
	slots = n;
	return first_new;
}

static int register_fd(int op, int fd, uint32_t events, uint64_t data)
{
	struct epoll_event ev = { .events = events | EPOLLONESHOT, .data.u64 = data };

	return epoll_ctl(epfd, op, fd, &ev) ? -errno : 0;
}

static int arm_new(struct poll_watch_ref *ref, int fd, uint32_t events,
		   struct fuse_pollhandle *ph)
{
	long slot = free_slot();
	uint32_t serial;
	int r;

	if (slot < 0)
		return -ENOMEM;
	if (!(serial = ++next_serial))
		serial = ++next_serial;
	if ((r = register_fd(EPOLL_CTL_ADD, fd, events, data_of((uint32_t)slot, serial))))
		return r;
	table[slot] = (struct watch){ serial, fd, ph, 0 };
	*ref = (struct poll_watch_ref){ (uint32_t)slot, serial };
	return 0;
}

int poll_watch_arm(struct poll_watch_ref *ref, int fd, uint32_t events,
		   struct fuse_pollhandle *ph)
{
	struct watch *w;
	int r;

	pthread_mutex_lock(&lock);
	if (!taking_watches) {
		r = -EPERM;
	} else if ((w = found(ref))) {
		r = register_fd(EPOLL_CTL_MOD, fd, events, data_of(ref->slot, ref->serial));
		if (!r) {
			if (w->ph)
				fuse_pollhandle_destroy(w->ph);
			w->ph = ph;
		}
	} else {
		r = arm_new(ref, fd, events, ph);
	}
	pthread_mutex_unlock(&lock);
	return r;
}

void poll_watch_drop(struct poll_watch_ref *ref)
{
	struct watch *w;

	pthread_mutex_lock(&lock);
	if ((w = found(ref))) {
		epoll_ctl(epfd, EPOLL_CTL_DEL, w->fd, NULL);
		if (w->ph)
			fuse_pollhandle_destroy(w->ph);
		*w = (struct watch){ 0, -1, NULL, 0 };
	}
	*ref = (struct poll_watch_ref){ 0, 0 };
	pthread_mutex_unlock(&lock);
}

/* The poll that epoll made may have taken the event (mountinfo's POLLPRI
 * is reported once a change, to the first poll of the open file after it):
 * what it reported is kept for the next POLL. */
static void fired(uint64_t data, uint32_t events)
{
	struct poll_watch_ref ref = { (uint32_t)(data >> 32), (uint32_t)data };
	struct watch *w;

	pthread_mutex_lock(&lock);
	if ((w = found(&ref))) {
		w->fired |= events;
		notify(w);
	}
	pthread_mutex_unlock(&lock);
}

uint32_t poll_watch_take(struct poll_watch_ref *ref)
{
	struct watch *w;
	uint32_t events = 0;

	pthread_mutex_lock(&lock);
	if ((w = found(ref))) {
		events = w->fired;
		w->fired = 0;
	}
	pthread_mutex_unlock(&lock);
	return events;
}

static void *watch_loop(void *arg)
{
	struct epoll_event ev[EVENTS_A_WAIT];
	int n;

	(void)arg;
	for (;;) {
		if ((n = epoll_wait(epfd, ev, EVENTS_A_WAIT, -1)) < 0 && errno != EINTR) {
			log_warn("poll watches: epoll_wait: %m");
			return NULL;
		}
		for (int i = 0; i < n; i++) {
			if (ev[i].data.u64 == STOP_DATA)
				return NULL;
			fired(ev[i].data.u64, ev[i].events);
		}
	}
}

int poll_watch_start(void)
{
	struct epoll_event stop = { .events = EPOLLIN, .data.u64 = STOP_DATA };
	sigset_t all, before;
	int r;

	if ((epfd = epoll_create1(EPOLL_CLOEXEC)) < 0 ||
	    (stopfd = eventfd(0, EFD_CLOEXEC)) < 0 || epoll_ctl(epfd, EPOLL_CTL_ADD, stopfd, &stop))
		return -errno;
	sigfillset(&all); /* signals go to libfuse's threads */
	pthread_sigmask(SIG_BLOCK, &all, &before);
	r = pthread_create(&watcher, NULL, watch_loop, NULL);
	pthread_sigmask(SIG_SETMASK, &before, NULL);
	if (r)
		return -r;
	pthread_mutex_lock(&lock);
	watching = taking_watches = 1;
	pthread_mutex_unlock(&lock);
	return 0;
}

void poll_watch_stop(void)
{
	uint64_t one = 1;

	pthread_mutex_lock(&lock);
	for (uint32_t i = 0; i < slots; i++)
		if (table[i].serial)
			notify(&table[i]);
	taking_watches = 0;
	pthread_mutex_unlock(&lock);
	if (watching && write(stopfd, &one, sizeof(one)) == sizeof(one))
		pthread_join(watcher, NULL);
	watching = 0;
}
