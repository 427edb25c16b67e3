/* One READDIR or READDIRPLUS reply, filled entry by entry. Under
 * READDIRPLUS, the entries of a directory whose class lists with lookups
 * (NC_LIST_PLUS: fd/, whose names tools look up next) carry that lookup,
 * which saves the LOOKUP each name would cost; any other entry carries
 * none (node id 0), so listing the root never stats a process. */
#ifndef PROCFAST_DIR_REPLY_H
#define PROCFAST_DIR_REPLY_H

#include <sys/types.h>

#include <fuse_lowlevel.h>

struct node;

/* Lookups one reply may carry; the entries past them carry none. */
#define DIR_REPLY_LOOKUPS 256

struct dir_reply {
	fuse_req_t req;
	struct node *dir;
	char *out;
	size_t size, used;
	int plus;       /* READDIRPLUS format */
	int lookups;    /* and the entries carry lookups */
	size_t nlooked;
	uint64_t looked[DIR_REPLY_LOOKUPS]; /* node ids looked up, to forget if unsent */
};

/* A reply of at most size bytes to req, listing dir. */
void dir_reply_init(struct dir_reply *r, fuse_req_t req, struct node *dir, size_t size, int plus);

/* Adds one entry (next: the offset after it); 0 when the reply is full. */
int dir_reply_add(struct dir_reply *r, const char *name, unsigned char type, ino_t ino,
		  off_t next);

/* Sends what was added, or err (< 0) when nothing was. */
void dir_reply_send(struct dir_reply *r, int err);

#endif
