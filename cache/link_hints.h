/* Which fd of a directory last read as a given link text.
 *
 * The kernel resolves a relative link text such as "socket:[159173]" inside
 * the link's own directory, so right after readlink("PID/fd/7") the daemon
 * gets lookup("PID/fd", "socket:[159173]"). Remembering the readlink answer
 * turns that lookup into one check instead of a scan of the directory.
 * Direct-mapped and lossy on purpose: a hint is always verified by reading
 * the link again, so a stale or torn slot costs a scan, never a wrong answer.
 */
#ifndef PROCFAST_LINK_HINTS_H
#define PROCFAST_LINK_HINTS_H

#include <stdint.h>

void link_hint_put(uint64_t dir_uid, const char *text, int fd);
/* The remembered fd, or -1. */
int link_hint_get(uint64_t dir_uid, const char *text);

#endif
