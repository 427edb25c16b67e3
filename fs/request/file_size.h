/* The size the kernel holds of a regular file, apart from the one shown
 * (file_size.c). */
#ifndef PROCFAST_FILE_SIZE_H
#define PROCFAST_FILE_SIZE_H

#include "cache/nodes/node.h"

/* Whether the kernel must hold a size above the one shown for n (0, as
 * procfs shows it): regular files of the source. */
int file_size_hidden(const struct node *n);

/* Before an attribute reply for n (a lookup's or getattr's; for_fd: one that
 * answers for an open file, as lseek's SEEK_END asks): while n is open the
 * kernel keeps the size it holds; else it takes the reply's. */
void file_size_before_reply(struct node *n, int for_fd);

/* n is being opened / was released. */
void file_size_opening(struct node *n);
void file_size_released(struct node *n);

#endif
