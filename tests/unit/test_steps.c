/* fs/daemon/steps.c: a start and stop as one table. Steps start in order
 * until one fails; what started stops in reverse, and nothing else does. */
#include <assert.h>
#include <stdio.h>
#include <string.h>

#include "fs/daemon/steps.h"

struct trace {
	char log[64];
	int fail_at; /* the step that fails to start, or -1 */
};

static void note(struct trace *t, char what, int i)
{
	size_t n = strlen(t->log);

	t->log[n] = what;
	t->log[n + 1] = (char)('0' + i);
}

#define STEP(i)                                                                 \
	static int start##i(void *ctx)                                          \
	{                                                                       \
		struct trace *t = ctx;                                          \
		note(t, '+', i);                                                \
		return t->fail_at == i ? -1 : 0;                                \
	}                                                                       \
	static void stop##i(void *ctx)                                          \
	{                                                                       \
		note(ctx, '-', i);                                              \
	}
STEP(0)
STEP(1)
STEP(3)

static const struct step table[] = {
	{ "zero", start0, stop0 },
	{ "one", start1, stop1 },
	{ "two: nothing to start or stop", NULL, NULL },
	{ "three", start3, stop3 },
};

static void run(int fail_at, size_t want_started, const char *want)
{
	struct trace t = { .fail_at = fail_at };
	size_t started = steps_start(table, STEPS_COUNT(table), &t);

	assert(started == want_started);
	steps_stop(table, started, &t);
	if (strcmp(t.log, want)) {
		fprintf(stderr, "fail_at %d: %s, not %s\n", fail_at, t.log, want);
		assert(0);
	}
}

int main(void)
{
	run(-1, 4, "+0+1+3-3-1-0");   /* all, then all in reverse */
	run(0, 0, "+0");              /* the one that failed is not stopped */
	run(1, 1, "+0+1-0");
	run(3, 3, "+0+1+3-1-0");
	printf("steps: ok\n");
	return 0;
}
