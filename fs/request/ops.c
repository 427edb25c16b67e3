/* The operation table and the session-wide settings negotiated at INIT. */
#include "fs/request/ops.h"

#include "fs/caller/fair.h"
#include "fs/lib/settings.h"
#include "fs/request/stale.h"

struct procfast pf = { .srcfd = -1, .selfproc = -1 };

static void (*on_connected)(void);

static void pf_init(void *userdata, struct fuse_conn_info *conn)
{
	(void)userdata;
	/* O_TRUNC reaches the source open (procfs accepts it on its writable
	 * files) instead of becoming a separate SETATTR. */
	if (conn->capable & FUSE_CAP_ATOMIC_O_TRUNC)
		conn->want |= FUSE_CAP_ATOMIC_O_TRUNC;
	/* fd/ is listed with its entries' lookups, which tools make next; the
	 * kernel asks for them at the start of a listing and after lookups in
	 * it (AUTO), and other directories answer without (dir_reply.h), so
	 * listing the root never stats a process. */
	if ((conn->capable & FUSE_CAP_READDIRPLUS) && (conn->capable & FUSE_CAP_READDIRPLUS_AUTO))
		conn->want |= FUSE_CAP_READDIRPLUS | FUSE_CAP_READDIRPLUS_AUTO;
	else
		conn->want &= ~(FUSE_CAP_READDIRPLUS | FUSE_CAP_READDIRPLUS_AUTO);
	/* Never let the kernel cache symlink texts: "self" differs per caller. */
	conn->want &= ~FUSE_CAP_CACHE_SYMLINKS;
	if (on_connected)
		on_connected();
}

const struct fuse_lowlevel_ops *procfast_ops(void (*connected)(void))
{
	static struct fuse_lowlevel_ops ops = { .init = pf_init };

	on_connected = connected;
	if (!ops.lookup) {
		stale_guard_ops(&ops);
		fair_guard_ops(&ops); /* every request begins here */
	}
	return &ops;
}
