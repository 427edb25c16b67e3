/* Nanoseconds of a clock, for timeouts and ages: one definition for every
 * module (the small library beside fs/lib/log.h and fs/lib/cleanup.h). */
#ifndef PROCFAST_CLOCK_H
#define PROCFAST_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t clock_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* CLOCK_MONOTONIC, the clock of every age the daemon keeps. */
static inline uint64_t now_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

#endif
