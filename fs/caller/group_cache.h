/* A short-lived cache of callers' thread group, effective ids,
 * supplementary groups and whether their user namespace is another's than
 * the daemon's (for callers without capabilities: one with any has it
 * asked at each request, as entering a user namespace gives a full set).
 *
 * They come from /proc/TID/status, too costly to read on every request.
 * An entry serves only the same thread with the same fsuid/fsgid for at most
 * GROUP_CACHE_TTL_MS: setuid/setgid-style changes, which come with a new
 * fsuid or fsgid, are seen at once; a bare setgroups() is seen within the TTL.
 * Capabilities are never cached (capget is cheap and exact).
 */
#ifndef PROCFAST_GROUP_CACHE_H
#define PROCFAST_GROUP_CACHE_H

#include "fs/caller/identity.h"

#define GROUP_CACHE_TTL_MS 1000

/* 0 and c->tgid, c->euid, c->egid, c->foreign_user, c->groups filled, or
 * -1 on a miss. */
int group_cache_get(struct caller *c);
void group_cache_put(const struct caller *c);

#endif
