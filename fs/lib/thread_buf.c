#include "fs/lib/thread_buf.h"

#include <pthread.h>
#include <stdlib.h>

struct thread_bufs {
	char *buf[BUF_KINDS];
	size_t len[BUF_KINDS];
};

static pthread_key_t key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;

/* libfuse starts and ends worker threads as load comes and goes. */
static void release(void *p)
{
	struct thread_bufs *b = p;

	for (int i = 0; i < BUF_KINDS; i++)
		free(b->buf[i]);
	free(b);
}

static void make_key(void)
{
	pthread_key_create(&key, release);
}

char *thread_buf(enum thread_buf which, size_t size)
{
	struct thread_bufs *b;
	char *more;

	pthread_once(&key_once, make_key);
	b = pthread_getspecific(key);
	if (!b) {
		if (!(b = calloc(1, sizeof(*b))) || pthread_setspecific(key, b)) {
			free(b);
			return NULL;
		}
	}
	if (size <= b->len[which] && b->buf[which])
		return b->buf[which];
	if (!(more = realloc(b->buf[which], size ? size : 1)))
		return NULL;
	b->buf[which] = more;
	b->len[which] = size ? size : 1;
	return more;
}
