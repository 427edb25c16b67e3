/* What a name in the tree is, decided from its text alone: pids, fd
 * numbers, the caller links, link texts, thread directory paths. Pure (no
 * I/O, no state), so the fuzz targets (tests/fuzz) test what entry.c,
 * link.c, dedup.c, thread_dir.c and the TGID index decide with.
 */
#ifndef PROCFAST_NAMES_H
#define PROCFAST_NAMES_H

#include <sys/types.h>

/* A pid name in canonical decimal, as procfs's name_to_int accepts it
 * (no sign, no leading zero, at most INT_MAX): the pid, else 0. */
pid_t name_pid(const char *name);

/* An fd/N or fdinfo/N name, canonical decimal as for pids but "0" too:
 * the fd, else -1. */
int name_fd(const char *name);

/* "self" or "thread-self", the links whose text depends on the caller. */
int name_is_caller_link(const char *name);

/* A link text such as "socket:[N]", "pipe:[N]", "anon_inode:[eventfd]":
 * never a name in procfs; the kernel asks for one only while following such
 * a link. */
int name_is_link_text(const char *name);

/* A link text that names one object ("socket:[159173]"), whose attributes
 * never change; "anon_inode:[eventfd]" names many. */
int name_is_one_object(const char *name);

/* A thread directory path "P/task/T[/REST]" (canonical pids): sets *tgid
 * and *tid and returns REST ("" for the directory itself), else NULL. */
const char *thread_path_split(const char *path, pid_t *tgid, pid_t *tid);

#endif
