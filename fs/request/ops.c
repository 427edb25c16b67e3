/* The operation table and the session-wide settings negotiated at INIT.
 *
 * Each operation begins its request itself (request.h: the busy share, the
 * node, ESTALE for an id of an earlier server); what is not here stays
 * unset, and the kernel gets ENOSYS. */
#include "fs/request/ops.h"

#include "fs/request/dir.h"
#include "fs/request/entry.h"
#include "fs/request/file.h"
#include "fs/request/mutate.h"
#include "fs/request/poll.h"
#include "fs/request/xattr.h"

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
}

static const struct fuse_lowlevel_ops procfast_operations = {
	.init = pf_init,
	/* names and attributes (entry.c) */
	.lookup = pf_lookup,
	.forget = pf_forget,
	.forget_multi = pf_forget_multi,
	.getattr = pf_getattr,
	.setattr = pf_setattr,
	.access = pf_access,
	.statfs = pf_statfs,
	.getxattr = xattr_get,
	.listxattr = xattr_list,
	.setxattr = xattr_set,
	.removexattr = xattr_remove,
	.readlink = pf_readlink, /* by the node's kind (entry_kinds.c) */
	/* listings (dir.c) */
	.opendir = pf_opendir,
	.readdir = pf_readdir,
	.readdirplus = pf_readdirplus,
	.releasedir = pf_releasedir,
	/* contents (file.c) */
	.open = pf_open,
	.read = pf_read,
	.write = pf_write,
	.release = pf_release,
	.poll = pf_poll, /* poll.c */
	/* changes, refused as procfs refuses them (mutate.c) */
	.mknod = pf_mknod,
	.mkdir = pf_mkdir,
	.unlink = pf_unlink,
	.rmdir = pf_rmdir,
	.symlink = pf_symlink,
	.create = pf_create,
	.rename = pf_rename,
	.link = pf_link,
};

const struct fuse_lowlevel_ops *procfast_ops(void)
{
	return &procfast_operations;
}
