/* Which link a caller last read, to answer the lookup of its text.
 *
 * The kernel resolves a relative link text such as "socket:[159173]" inside
 * the link's own directory: right after readlink("PID/fd/7") for a thread,
 * the daemon gets lookup("PID/fd", "socket:[159173]") from the same thread
 * (FUSE's request pid is the caller's tid, and a path walk is one thread's).
 * Remembering, per caller thread, the directory, the link's name and the
 * text that readlink answered turns that lookup into one check of one link
 * instead of a scan of the directory (O(fds): 35-55 ms at 19,000 fds).
 *
 * A thread's hint is replaced only by its own next readlink: other threads
 * do not evict it (the table grows with the threads that read links, and
 * forgets those that have not for 10 s; past 131,072 threads reading links
 * within 10 s the oldest hints go). Callers outside the daemon's
 * pid namespace (tid 0) cannot be told apart: theirs are kept by directory
 * and text in a small lossy table. A hint is a claim to verify, never an
 * answer: the lookup reads the link again (link.c).
 */
#ifndef PROCFAST_LINK_HINTS_H
#define PROCFAST_LINK_HINTS_H

#include <stdint.h>
#include <sys/types.h>

/* Longest link name kept (an fd number, "pid_for_children"...), NUL included. */
#define LINK_HINT_NAME_MAX 24

/* tid read the link entry of directory dir (its node serial) as text.
 * An entry name too long to keep is not remembered. */
void link_hint_put(pid_t tid, uint64_t dir, const char *entry, const char *text);

/* The entry of dir that tid last read as text, into entry (LINK_HINT_NAME_MAX
 * bytes): 0, or -ENOENT when tid's last readlink was not that. */
int link_hint_get(pid_t tid, uint64_t dir, const char *text, char *entry);

#endif
