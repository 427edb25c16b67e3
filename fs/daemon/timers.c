/* One thread, woken by a timerfd, runs each sweep when its period is due.
 * The sweeps ran on the process-events thread before; they keep what they do
 * and how often (each second). A stop is an eventfd written. */
#include "fs/daemon/timers.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "cache/index/proc_events.h"
#include "cache/nodes/node.h"
#include "fs/caller/ns_helper.h"
#include "fs/caller/reader_ns.h"
#include "fs/lib/log.h"

#define TICK_MS 1000 /* the shortest period below */

/* What the FUSE face keeps only while it is used, let go every few seconds. */
static void trim_callers(void)
{
	reader_ns_trim();
	ns_helper_trim();
}

static const struct timer {
	const char *name;
	unsigned period_ms; /* a multiple of TICK_MS */
	void (*run)(void);
} timers[] = {
	{ "exited processes", 1000, proc_events_sweep },
	{ "node table memory", 1000, node_table_trim },
	{ "callers' namespaces and helpers", 1000, trim_callers },
};
_Static_assert(TICK_MS <= 1000, "TICK_MS is the shortest period");

static pthread_t thread;
static int tick_fd = -1, stop_fd = -1, running;

static void *timers_loop(void *unused)
{
	struct pollfd p[2] = { { .fd = tick_fd, .events = POLLIN }, { .fd = stop_fd, .events = POLLIN } };
	uint64_t ticks, elapsed = 0;

	(void)unused;
	while (!(p[1].revents & POLLIN)) {
		if (poll(p, 2, -1) < 0 || !(p[0].revents & POLLIN) ||
		    read(tick_fd, &ticks, sizeof(ticks)) != sizeof(ticks))
			continue;
		elapsed += ticks * TICK_MS;
		for (size_t i = 0; i < sizeof(timers) / sizeof(timers[0]); i++)
			if (elapsed % timers[i].period_ms < ticks * TICK_MS)
				timers[i].run();
	}
	return NULL;
}

int timers_start(void)
{
	struct itimerspec every = { .it_interval = { TICK_MS / 1000, (TICK_MS % 1000) * 1000000L },
				    .it_value = { TICK_MS / 1000, (TICK_MS % 1000) * 1000000L } };
	int r;

	tick_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
	stop_fd = eventfd(0, EFD_CLOEXEC);
	if (tick_fd < 0 || stop_fd < 0 || timerfd_settime(tick_fd, 0, &every, NULL)) {
		r = -errno;
		timers_stop();
		return r;
	}
	if ((r = pthread_create(&thread, NULL, timers_loop, NULL))) {
		timers_stop();
		return -r;
	}
	pthread_setname_np(thread, "pf-timers");
	running = 1;
	return 0;
}

void timers_stop(void)
{
	uint64_t one = 1;

	if (running) {
		if (write(stop_fd, &one, sizeof(one)) < 0)
			log_err("cannot stop the timers: %s", strerror(errno));
		pthread_join(thread, NULL);
		running = 0;
	}
	if (tick_fd >= 0)
		close(tick_fd);
	if (stop_fd >= 0)
		close(stop_fd);
	tick_fd = stop_fd = -1;
}
