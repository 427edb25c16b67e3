/* A task's own state, as procfs shows it to the task (self_state.c). */
#ifndef PROCFAST_SELF_STATE_H
#define PROCFAST_SELF_STATE_H

#include <stddef.h>
#include <sys/types.h>

#include "cache/nodes/node.h"

/* Whether n shows the state of the calling thread caller_tid. */
int self_state_applies(const struct node *n, pid_t caller_tid);

/* n's whole text (len bytes) made into what procfs gives the task it shows,
 * in place: its new length. */
size_t self_state_fix(const struct node *n, char *text, size_t len);

#endif
