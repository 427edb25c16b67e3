/* Open directory handles (dir.c). */
#ifndef PROCFAST_DIR_H
#define PROCFAST_DIR_H

#include <fuse_lowlevel.h>

/* Operations of the table (ops.c). */
void pf_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void pf_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi);
void pf_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi);
void pf_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);

#endif
