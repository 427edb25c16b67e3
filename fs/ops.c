/* The operation table and the session-wide settings negotiated at INIT. */
#include "fs/ops.h"
#include "fs/procfast.h"

struct procfast pf = { .srcfd = -1, .selfproc = -1 };

static void pf_init(void *userdata, struct fuse_conn_info *conn)
{
	(void)userdata;
	/* O_TRUNC reaches the source open (procfs accepts it on its writable
	 * files) instead of becoming a separate SETATTR. */
	if (conn->capable & FUSE_CAP_ATOMIC_O_TRUNC)
		conn->want |= FUSE_CAP_ATOMIC_O_TRUNC;
	/* Listing the root must not stat every process. */
	conn->want &= ~(FUSE_CAP_READDIRPLUS | FUSE_CAP_READDIRPLUS_AUTO);
	/* Never let the kernel cache symlink texts: "self" differs per caller. */
	conn->want &= ~FUSE_CAP_CACHE_SYMLINKS;
}

const struct fuse_lowlevel_ops procfast_ops = {
	.init = pf_init,
	.lookup = pf_lookup,
	.forget = pf_forget,
	.forget_multi = pf_forget_multi,
	.getattr = pf_getattr,
	.setattr = pf_setattr,
	.access = pf_access,
	.statfs = pf_statfs,
	.getxattr = pf_getxattr,
	.listxattr = pf_listxattr,
	.setxattr = pf_setxattr,
	.removexattr = pf_removexattr,
	.readlink = pf_readlink,
	.opendir = pf_opendir,
	.readdir = pf_readdir,
	.releasedir = pf_releasedir,
	.open = pf_open,
	.read = pf_read,
	.write = pf_write,
	.release = pf_release,
	.mknod = pf_mknod,
	.mkdir = pf_mkdir,
	.unlink = pf_unlink,
	.rmdir = pf_rmdir,
	.symlink = pf_symlink,
	.create = pf_create,
	.rename = pf_rename,
	.link = pf_link,
};
