/* The FUSE low-level operations, one group per file:
 * entry.c (names, attributes), link.c (links), dir.c (listings),
 * file.c (contents), mutate.c (changes, all refused by procfs). */
#ifndef PROCFAST_OPS_H
#define PROCFAST_OPS_H

#include <fuse_lowlevel.h>

/* The operation table; connected is called once a server's session is set
 * up (INIT answered). */
const struct fuse_lowlevel_ops *procfast_ops(void (*connected)(void));

/* fuse_reply_err with the kernel's convention of negative errno. */
static inline void reply_err(fuse_req_t req, int negerr)
{
	fuse_reply_err(req, negerr < 0 ? -negerr : negerr);
}

void pf_lookup(fuse_req_t req, fuse_ino_t parent, const char *name);
void pf_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup);
void pf_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets);
void pf_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void pf_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		struct fuse_file_info *fi);
void pf_access(fuse_req_t req, fuse_ino_t ino, int mask);
void pf_statfs(fuse_req_t req, fuse_ino_t ino);

void pf_readlink(fuse_req_t req, fuse_ino_t ino);

void pf_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void pf_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi);
void pf_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi);
void pf_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);

void pf_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void pf_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi);
void pf_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
	      struct fuse_file_info *fi);
void pf_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);

void pf_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev);
void pf_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode);
void pf_unlink(fuse_req_t req, fuse_ino_t parent, const char *name);
void pf_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name);
void pf_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name);
void pf_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
	       struct fuse_file_info *fi);
void pf_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
	       const char *newname, unsigned int flags);
void pf_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname);

#endif
