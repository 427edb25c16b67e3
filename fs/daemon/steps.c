#include "fs/daemon/steps.h"

size_t steps_start(const struct step *t, size_t n, void *ctx)
{
	for (size_t i = 0; i < n; i++)
		if (t[i].start && t[i].start(ctx))
			return i; /* the step said why */
	return n;
}

void steps_stop(const struct step *t, size_t started, void *ctx)
{
	while (started--)
		if (t[started].stop)
			t[started].stop(ctx);
}
