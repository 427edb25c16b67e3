#include "cache/proc_fields.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

int stat_parse(const char *text, int *exited, uint64_t *start)
{
	const char *p = strrchr(text, ')');
	unsigned long long v;
	char *end;

	*exited = 1;
	if (!p || p[1] != ' ' || !p[2])
		return -1;
	p += 2; /* field 3, the state */
	*exited = *p == 'Z' || *p == 'X';
	for (int field = 3; field < 22; field++) /* to the space before field 22 */
		if (!(p = strchr(p, ' ')) || !*++p)
			return -1;
	if (*p < '0' || *p > '9')
		return -1;
	errno = 0;
	v = strtoull(p, &end, 10);
	if (errno || (*end && *end != ' ' && *end != '\n'))
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

int status_groups(const char *text, gid_t *groups, int max)
{
	const char *p = status_line(text, "Groups:");
	int n = 0;

	if (!p)
		return 0;
	while (n < max) {
		unsigned long g;
		char *end;

		while (*p == ' ' || *p == '\t')
			p++;
		if (*p < '0' || *p > '9')
			break;
		errno = 0;
		g = strtoul(p, &end, 10);
		if (errno || g > UINT32_MAX)
			break;
		groups[n++] = (gid_t)g;
		p = end;
	}
	return n;
}
