#include "fs/lib/proc_names.h"

#include <limits.h>
#include <stdint.h>
#include <string.h>

/* Canonical decimal at the start of s, at most max: its value and *end
 * just past its digits, else -1. */
static long decimal(const char *s, long max, const char **end)
{
	long v = 0;
	const char *p = s;

	if (*p < '0' || *p > '9' || (p[0] == '0' && p[1] >= '0' && p[1] <= '9'))
		return -1;
	for (; *p >= '0' && *p <= '9'; p++) {
		v = v * 10 + (*p - '0');
		if (v > max)
			return -1;
	}
	*end = p;
	return v;
}

static long whole_decimal(const char *s, long max)
{
	const char *end;
	long v = decimal(s, max, &end);

	return v >= 0 && !*end ? v : -1;
}

pid_t name_pid(const char *name)
{
	long v = whole_decimal(name, INT_MAX);

	return v > 0 ? (pid_t)v : 0;
}

int name_fd(const char *name)
{
	return (int)whole_decimal(name, INT32_MAX);
}

int name_is_caller_link(const char *name)
{
	return !strcmp(name, "self") || !strcmp(name, "thread-self");
}

int name_is_link_text(const char *name)
{
	return strchr(name, ':') != NULL;
}

int name_is_one_object(const char *name)
{
	const char *open = strstr(name, ":[");

	return open && strncmp(name, "anon_inode:", 11) && open[2] >= '0' && open[2] <= '9';
}

const char *thread_path_split(const char *path, pid_t *tgid, pid_t *tid)
{
	const char *p;
	long g = decimal(path, INT_MAX, &p), t;

	if (g <= 0 || strncmp(p, "/task/", 6))
		return NULL;
	t = decimal(p + 6, INT_MAX, &p);
	if (t <= 0 || (*p && (*p != '/' || !p[1])))
		return NULL;
	*tgid = (pid_t)g;
	*tid = (pid_t)t;
	return *p ? p + 1 : p;
}
