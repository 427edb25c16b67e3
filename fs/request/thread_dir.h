/* Threads' fixed-name directories listed from templates (thread_dir.c). */
#ifndef PROCFAST_THREAD_DIR_H
#define PROCFAST_THREAD_DIR_H

#include <fuse_lowlevel.h>

#include "cache/nodes/node.h"

void thread_dir_init(int same_pid_ns);
void thread_dir_destroy(void);
int thread_dir_listed(const struct node *dir);
struct dir_reply;
int thread_dir_fill(struct dir_reply *r, off_t off);

#endif
