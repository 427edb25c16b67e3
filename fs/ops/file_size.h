/* The size attribute of a regular file (file_size.c). */
#ifndef PROCFAST_FILE_SIZE_H
#define PROCFAST_FILE_SIZE_H

#include <sys/stat.h>
#include <sys/types.h>

#include "cache/node.h"
#include "fs/ops/caller.h"

/* What a lookup says of a regular file's size (never shown: its attributes
 * are not cached), so that the kernel's page-cache splice asks the daemon. */
#define FILE_SIZE_UNTOLD (1LL << 30)

/* Whether n's size is its content's length (regular files but the opaque:
 * kcore, kmsg, pagemap, mem...). */
int file_size_is_content(const struct node *n);

/* The length of n's content as the caller c reads it (c begun with n's
 * content namespaces, caller.h), from fd if the caller holds one open, else
 * from a fresh open: 0 when it cannot be read. Bounded by FILE_SIZE_MAX. */
off_t file_size_count(const struct node *n, const struct caller *c, int fd);

/* The kernel's idea of n's size is now size (a lookup or getattr reply). */
void file_size_told(struct node *n, off_t size);

/* Before n is opened: a size of 0 told to another caller would make the
 * kernel end this caller's splice at once; it is raised again. */
void file_size_before_open(struct node *n);

#endif
