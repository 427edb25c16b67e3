#include "fs/lib/kernel_feature.h"

#include <stdio.h>
#include <string.h>

static const char *const names[KF_COUNT] = {
	[KF_PIDFS] = "pidfs",
	[KF_PID_IOCTL] = "pid_ioctl",
	[KF_EVENT_FILTER] = "event_filter",
	[KF_PASSTHROUGH] = "passthrough",
};

/* Set once at start, before any thread: read without a lock after. */
static unsigned disabled;

const char *kernel_feature_name(enum kernel_feature f)
{
	return (unsigned)f < KF_COUNT ? names[f] : "?";
}

static int feature_by_name(const char *name, size_t len)
{
	for (int f = 0; f < KF_COUNT; f++)
		if (strlen(names[f]) == len && !strncmp(names[f], name, len))
			return f;
	return -1;
}

int kernel_feature_disable(const char *list)
{
	while (list && *list) {
		size_t len = strcspn(list, ":");
		int f = feature_by_name(list, len);

		if (f < 0) {
			fprintf(stderr, "procfast: without=%.*s: unknown (known: pidfs, pid_ioctl, event_filter)\n",
				(int)len, list);
			return -1;
		}
		disabled |= 1u << f;
		list += len + (list[len] == ':');
	}
	return 0;
}

int kernel_feature_allowed(enum kernel_feature f)
{
	return !(disabled & (1u << f));
}
