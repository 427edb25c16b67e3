/* A start and stop as one ordered table: each step starts in order, and what
 * started is stopped in reverse, from wherever the start got to. */
#ifndef PROCFAST_STEPS_H
#define PROCFAST_STEPS_H

#include <stddef.h>

struct step {
	const char *name;
	/* 0, or -1 (having said why) when what follows cannot start; NULL
	 * for nothing to start */
	int (*start)(void *ctx);
	void (*stop)(void *ctx); /* NULL for nothing to undo */
};

/* Starts t[0..n) in order until one fails. Returns how many started. */
size_t steps_start(const struct step *t, size_t n, void *ctx);

/* Stops the first `started` steps of t, the last started first. */
void steps_stop(const struct step *t, size_t started, void *ctx);

#define STEPS_COUNT(t) (sizeof(t) / sizeof((t)[0]))

#endif
