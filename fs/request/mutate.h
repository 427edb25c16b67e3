/* Operations that would change the tree: procfs refuses each in its own
 * way, and the source is asked as the caller (mutate.c). */
#ifndef PROCFAST_MUTATE_H
#define PROCFAST_MUTATE_H

#include <fuse_lowlevel.h>

/* Operations of the table (ops.c). */
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
