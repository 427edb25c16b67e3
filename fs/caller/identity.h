/* Who a caller is: what caller_load reads of the requesting thread (its
 * ids, groups, capabilities, user namespace) and the namespaces a worker
 * entered for it. Apart from caller.h so that the group cache, which
 * caller.c fills, can hold the same fields without including caller.h. */
#ifndef PROCFAST_IDENTITY_H
#define PROCFAST_IDENTITY_H

#include <stdint.h>
#include <sys/types.h>

#include "fs/caller/reader_ns.h"

#define CALLER_MAX_GROUPS 256

struct caller {
	pid_t tid;   /* 0 when the caller is outside the mount's pid namespace */
	pid_t tgid;
	uid_t uid;   /* fsuid */
	gid_t gid;   /* fsgid */
	uid_t euid; /* its real and saved ids are never taken: caller_ids_set */
	gid_t egid;
	uint64_t cap_eff;
	int foreign_user; /* in a user namespace not the daemon's */
	int ngroups;
	gid_t groups[CALLER_MAX_GROUPS];
	struct reader_ns ns; /* its namespaces this thread entered, and the foreign ones */
};

#endif
