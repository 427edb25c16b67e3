/* Extended attributes (xattr.c): getxattr, listxattr, setxattr and
 * removexattr, forwarded to the source as the caller. */
#ifndef PROCFAST_XATTR_H
#define PROCFAST_XATTR_H

#include <stddef.h>

#include <fuse_lowlevel.h>

void xattr_get(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size);
void xattr_list(fuse_req_t req, fuse_ino_t ino, size_t size);
void xattr_set(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value, size_t size,
	       int flags);
void xattr_remove(fuse_req_t req, fuse_ino_t ino, const char *name);

#endif
