/* The cache-lifetime policy: how long the kernel may keep a name (entry
 * timeout) and its attributes (attr timeout), from the name's class
 * (name_class.h: its life) narrowed by the state of the process it belongs
 * to. What an event will announce (an exit, a uid or gid change) may be
 * kept "for good" (a day): the event drops it (fs/request/invalidate.c).
 */
#ifndef PROCFAST_CACHE_LIFE_H
#define PROCFAST_CACHE_LIFE_H

#include "cache/nodes/node.h"
#include "fs/entries/name_class.h"

/* Whether a thread shares its leader's files (or net) is asked again within
 * this many seconds: a thread that unshares gets its own directory then. */
#define DEDUP_RECHECK_S 1.0

/* What the kernel may cache about name, of class cls, in parent. */
enum name_life cache_life_of(const struct node *parent, const struct name_class *cls,
			     const char *name);

/* The entry timeout of a name of that life in parent. */
double cache_life_entry_timeout(const struct node *parent, enum name_life life);

/* The attribute timeout of n, asked again at each getattr. */
double cache_life_attr_timeout(const struct node *n);

#endif
