/* A task's own state, as procfs shows it to the task (self_state.c). */
#ifndef PROCFAST_SELF_STATE_H
#define PROCFAST_SELF_STATE_H

#include <stddef.h>
#include <sys/types.h>

#include "cache/node.h"

/* Whether n shows the state of the calling thread caller_tid. */
int self_state_applies(const struct node *n, pid_t caller_tid);

/* The longest text read whole. */
#define SELF_TEXT_MAX (64 * 1024)

/* n's whole text as procfs gives it to the task it shows, read with
 * read_at(ctx, ...) from offset 0 into a new buffer of SELF_TEXT_MAX bytes
 * (*text, to free): its length, or -errno. */
ssize_t self_state_text(const struct node *n, char **text,
			ssize_t (*read_at)(void *ctx, char *buf, size_t size, off_t off), void *ctx);

#endif
