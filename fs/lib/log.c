#include "fs/lib/log.h"

#include <stdarg.h>
#include <stdio.h>

static int use_syslog;
static int debug_enabled;

void log_to_syslog(void)
{
	openlog("procfast", LOG_PID, LOG_DAEMON);
	use_syslog = 1;
}

int log_uses_syslog(void)
{
	return use_syslog;
}

void log_set_debug(int on)
{
	debug_enabled = on;
}

void log_msg(int priority, const char *fmt, ...)
{
	va_list ap;

	if (priority == LOG_DEBUG && !debug_enabled)
		return;
	va_start(ap, fmt);
	if (use_syslog) {
		vsyslog(priority, fmt, ap);
	} else {
		fputs("procfast: ", stderr);
		vfprintf(stderr, fmt, ap);
		fputc('\n', stderr);
	}
	va_end(ap);
}
