/* Buffers a worker thread keeps for its replies, so that a request
 * allocates nothing: freed when the thread ends (thread_buf.c). */
#ifndef PROCFAST_THREAD_BUF_H
#define PROCFAST_THREAD_BUF_H

#include <stddef.h>

enum thread_buf {
	BUF_REPLY,   /* what a read or a listing answers */
	BUF_SOURCE,  /* what a listing reads from the source first */
	BUF_KINDS
};

/* The calling thread's buffer of that kind, of at least size bytes, or NULL
 * (out of memory). Valid until the thread's next call for the same kind. */
char *thread_buf(enum thread_buf which, size_t size);

#endif
