#include "fs/lib/proc_fields.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The start of field n (3 or more) of a stat line, or NULL. */
static const char *stat_field_start(const char *text, int n)
{
	const char *p = strrchr(text, ')');

	if (!p || p[1] != ' ' || !p[2])
		return NULL;
	p += 2; /* field 3, the state */
	for (int field = 3; field < n; field++)
		if (!(p = strchr(p, ' ')) || !*++p)
			return NULL;
	return p;
}

int stat_number(const char *text, int n, unsigned long long *value)
{
	const char *p = n > 3 ? stat_field_start(text, n) : NULL;
	unsigned long long v;
	char *end;

	if (!p || *p < '0' || *p > '9')
		return -1;
	errno = 0;
	v = strtoull(p, &end, 10);
	if (errno || (*end && *end != ' ' && *end != '\n'))
		return -1;
	*value = v;
	return 0;
}

int stat_parse(const char *text, int *exited, uint64_t *start)
{
	const char *state = stat_field_start(text, 3);
	unsigned long long v;

	*exited = !state || *state == 'Z' || *state == 'X';
	if (!state || stat_number(text, 22, &v))
		return -1;
	*start = v;
	return 0;
}

/* The line of text that starts with key (at the start of text or of a line). */
static const char *status_line(const char *text, const char *key)
{
	size_t klen = strlen(key);

	for (const char *line = text; line; line = strchr(line, '\n'), line = line ? line + 1 : NULL)
		if (!strncmp(line, key, klen))
			return line + klen;
	return NULL;
}

pid_t status_tgid(const char *text)
{
	const char *v = status_line(text, "Tgid:");
	long tgid;

	if (!v)
		return 0;
	while (*v == ' ' || *v == '\t')
		v++;
	if (*v < '0' || *v > '9')
		return 0;
	errno = 0;
	tgid = strtol(v, NULL, 10);
	return errno || tgid > INT_MAX ? 0 : (pid_t)tgid;
}

/* The first max numbers after key on its line; how many were there. */
static int status_numbers(const char *text, const char *key, uint32_t *out, int max)
{
	const char *p = status_line(text, key);
	int n = 0;

	if (!p)
		return 0;
	while (n < max) {
		unsigned long v;
		char *end;

		while (*p == ' ' || *p == '\t')
			p++;
		if (*p < '0' || *p > '9')
			break;
		errno = 0;
		v = strtoul(p, &end, 10);
		if (errno || v > UINT32_MAX)
			break;
		out[n++] = (uint32_t)v;
		p = end;
	}
	return n;
}

int status_ids(const char *text, struct task_ids *ids)
{
	_Static_assert(sizeof(uid_t) == sizeof(uint32_t) && sizeof(gid_t) == sizeof(uint32_t),
		       "ids are 32 bits");
	if (status_numbers(text, "Uid:", (uint32_t *)ids->uid, 4) != 4 ||
	    status_numbers(text, "Gid:", (uint32_t *)ids->gid, 4) != 4)
		return -1;
	return 0;
}

int status_groups(const char *text, gid_t *groups, int max)
{
	_Static_assert(sizeof(gid_t) == sizeof(uint32_t), "gids are 32 bits");
	return status_numbers(text, "Groups:", (uint32_t *)groups, max);
}
