/* Walking a NUL-terminated text line by line, as every /proc and cgroup
 * text is read here. */
#ifndef PROCFAST_LINES_H
#define PROCFAST_LINES_H

#include <string.h>

/* The line after l, or NULL at the end of the text. */
static inline const char *line_next(const char *l)
{
	const char *nl = strchr(l, '\n');

	return nl && nl[1] ? nl + 1 : NULL;
}

#endif
