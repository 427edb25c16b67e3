/* FUSE-over-io_uring's part of the kernel's include/uapi/linux/fuse.h (protocol
 * 7.42, Linux 6.14). Debian 12's linux/fuse.h is 7.38 and lacks it; the values
 * and layouts are the kernel's. */
#ifndef PROCFAST_FUSE_URING_ABI_H
#define PROCFAST_FUSE_URING_ABI_H

#include <stdint.h>

#include <linux/fuse.h>

#ifndef FUSE_OVER_IO_URING
#define FUSE_OVER_IO_URING (1ULL << 41)
#endif

#ifndef FUSE_URING_IN_OUT_HEADER_SZ
#define FUSE_URING_IN_OUT_HEADER_SZ 128
#define FUSE_URING_OP_IN_OUT_SZ 128

struct fuse_uring_ent_in_out {
	uint64_t flags;
	uint64_t commit_id; /* names the request in its commit */
	uint32_t payload_sz; /* bytes valid in the payload buffer */
	uint32_t padding;
	uint64_t reserved;
};

/* An entry's header buffer: the kernel writes a request's fuse_in_header and
 * fixed argument here, and reads the reply's fuse_out_header from in_out. */
struct fuse_uring_req_header {
	char in_out[FUSE_URING_IN_OUT_HEADER_SZ];
	char op_in[FUSE_URING_OP_IN_OUT_SZ];
	struct fuse_uring_ent_in_out ring_ent_in_out;
};

enum fuse_uring_cmd {
	FUSE_IO_URING_CMD_INVALID = 0,
	FUSE_IO_URING_CMD_REGISTER = 1,
	FUSE_IO_URING_CMD_COMMIT_AND_FETCH = 2,
};

/* In the command area of an SQE128. */
struct fuse_uring_cmd_req {
	uint64_t flags;
	uint64_t commit_id;
	uint16_t qid;
	uint8_t padding[6];
};
#endif

#endif
