/* The POLL operation (poll.c). */
#ifndef PROCFAST_POLL_H
#define PROCFAST_POLL_H

#include <fuse_lowlevel.h>

void pf_poll(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
	     struct fuse_pollhandle *ph);

#endif
