/* Fields of a process's stat and status files, parsed from their text.
 * Pure (no I/O, no state): the readers (pidgen.c, procfile.c, caller.c) and
 * the fuzz targets (tests/fuzz) run the same code.
 */
#ifndef PROCFAST_PROC_FIELDS_H
#define PROCFAST_PROC_FIELDS_H

#include <stdint.h>
#include <sys/types.h>

/* From a NUL-terminated PID/stat line: whether the task has exited (state Z
 * or X) and its start time (field 22). The command (field 2) may hold
 * spaces, parentheses and newlines, so fields count from the last ')'.
 * 0, or -1 when the line has no start time (*exited is set whenever the
 * state was found, else 1). */
int stat_parse(const char *text, int *exited, uint64_t *start);

/* Numeric field n (4 or more, as proc(5) counts) of a NUL-terminated
 * PID/stat line: 0, or -1 when it is missing or not a number. */
int stat_number(const char *text, int n, unsigned long long *value);

/* The value of "Tgid:" in a NUL-terminated PID/status text, or 0. */
pid_t status_tgid(const char *text);

/* The "Groups:" of a NUL-terminated PID/status text, at most max of them;
 * how many, 0 when there is no such line. */
int status_groups(const char *text, gid_t *groups, int max);

/* A task's user and group ids, in the order of "Uid:" and "Gid:". */
enum { IDS_REAL, IDS_EFFECTIVE, IDS_SAVED, IDS_FS };
struct task_ids {
	uid_t uid[4];
	gid_t gid[4];
};

/* The "Uid:" and "Gid:" lines of a NUL-terminated PID/status text: 0, or -1
 * when either is missing or short. */
int status_ids(const char *text, struct task_ids *ids);

#endif
