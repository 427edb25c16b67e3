/* Open files (file.c). */
#ifndef PROCFAST_FILE_H
#define PROCFAST_FILE_H

#include <fuse_lowlevel.h>

/* Operations of the table (ops.c). */
void pf_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void pf_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi);
void pf_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
	      struct fuse_file_info *fi);
void pf_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);

#endif
