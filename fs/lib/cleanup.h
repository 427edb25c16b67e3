/* Scope-bound cleanup in the style of LXCFS's memory_utils.h: error paths
 * return early without leaking. */
#ifndef PROCFAST_CLEANUP_H
#define PROCFAST_CLEANUP_H

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

static inline void free_disarm(void *p)
{
	free(*(void **)p);
}

static inline void close_disarm(int *fd)
{
	if (*fd >= 0) {
		int saved = errno;
		close(*fd);
		errno = saved;
	}
}

#define __do_free __attribute__((__cleanup__(free_disarm)))
#define __do_close __attribute__((__cleanup__(close_disarm)))

/* Hand ownership out of a __do_close/__do_free variable. */
static inline int move_fd(int *fd)
{
	int r = *fd;
	*fd = -1;
	return r;
}

#endif
