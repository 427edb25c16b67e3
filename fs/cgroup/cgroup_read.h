/* Reading one cgroup's files: texts, numbers and "key value" tables.
 * Files are opened relative to the hierarchy's root with the calling
 * thread's credentials: as the caller, a cgroup it may not read gives
 * EACCES here, never its numbers. */
#ifndef PROCFAST_CGROUP_READ_H
#define PROCFAST_CGROUP_READ_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "fs/cgroup/cgroup_fs.h"

/* "max" in v2 files, and no value at all. */
#define CG_UNLIMITED UINT64_MAX

/* file's text, NUL-terminated (truncated to size - 1). Its length, or -errno. */
ssize_t cg_read(const struct cg_path *p, const char *file, char *buf, size_t size);

/* file's one number ("max" is CG_UNLIMITED). 0, or -errno. */
int cg_read_u64(const struct cg_path *p, const char *file, uint64_t *v);

/* The value of "key value" in a table's text (memory.stat, cpu.stat). 0, or -ENOENT. */
int cg_key_u64(const char *text, const char *key, uint64_t *v);

/* One key of a "key value" table, and where its value goes. */
struct cg_key {
	const char *name;
	uint64_t *value;
};

/* Sets the value of each of keys found in text, in one pass over its lines
 * (memory.stat has some forty: one search per key would read it n times);
 * keys not there keep their value. */
void cg_keys_u64(const char *text, const struct cg_key *keys, size_t n);

/* The smallest value of file in p and its ancestors (a limit: the nearest
 * one that binds). CG_UNLIMITED when none is set. 0, or -errno from p's own. */
int cg_min_up(const struct cg_path *p, const char *file, uint64_t *v);

#endif
