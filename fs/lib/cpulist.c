#include "fs/lib/cpulist.h"

#include <errno.h>
#include <stdlib.h>

static int number(const char **s, unsigned long *v)
{
	char *end;

	if (**s < '0' || **s > '9')
		return -EINVAL;
	*v = strtoul(*s, &end, 10);
	*s = end;
	return *v < CPU_SETSIZE ? 0 : -EINVAL;
}

int cpulist_parse(const char *s, cpu_set_t *set)
{
	unsigned long lo, hi;

	CPU_ZERO(set);
	while (*s && *s != '\n') {
		if (number(&s, &lo))
			return -EINVAL;
		hi = lo;
		if (*s == '-' && (s++, number(&s, &hi) || hi < lo))
			return -EINVAL;
		for (unsigned long c = lo; c <= hi; c++)
			CPU_SET(c, set);
		if (*s == ',')
			s++;
		else if (*s && *s != '\n')
			return -EINVAL;
	}
	return 0;
}
