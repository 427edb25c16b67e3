/* FUSE passthrough's ABI and the patches of libfuse's replies (fuse_passthrough.h). */
#include "fs/lib/fuse_passthrough.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "fs/lib/cleanup.h"
#include "fs/lib/kernel_feature.h"

/* include/uapi/linux/fuse.h of Linux 6.9 (Debian 12's headers are 6.1's) */
struct pt_backing_map {
	int32_t fd;
	uint32_t flags;
	uint64_t padding;
};
#define PT_IOC_MAGIC 229
#define PT_IOC_BACKING_OPEN _IOW(PT_IOC_MAGIC, 1, struct pt_backing_map)
#define PT_IOC_BACKING_CLOSE _IOW(PT_IOC_MAGIC, 2, uint32_t)
#define PT_FOPEN_PASSTHROUGH (1u << 7)
#define PT_INIT_PASSTHROUGH (1ull << 37)
#define PT_INIT_EXT (1u << 30)
/* struct fuse_init_out: flags2 and max_stack_depth (6.9) after max_pages, map_alignment */
#define PT_INIT_FLAGS_AT 12
#define PT_INIT_FLAGS2_AT 32
#define PT_INIT_STACK_DEPTH_AT 36
/* struct fuse_open_out: fh, open_flags, backing_id (6.9; padding before) */
#define PT_OPEN_FLAGS_AT 8
#define PT_OPEN_BACKING_AT 12
#define PT_OPEN_OUT_SIZE 16
#define PT_DIRECT_IO (1u << 0)

static int fuse_fd = -1;
static __thread int next_id;

int passthrough_probe(char *why, size_t len)
{
	struct pt_backing_map map = { .fd = -1 };
	__do_close int fd = -1;

	if (!kernel_feature_allowed(KF_PASSTHROUGH)) {
		snprintf(why, len, "taken away by without=passthrough");
		return -1;
	}
	if ((fd = open("/dev/fuse", O_RDWR | O_CLOEXEC)) < 0) {
		snprintf(why, len, "/dev/fuse: %s", strerror(errno));
		return -1;
	}
	/* An unmounted fd: a kernel that knows the ioctl refuses the fd (EPERM,
	 * EBADF or EINVAL); one that does not answers ENOTTY. */
	if (ioctl(fd, PT_IOC_BACKING_OPEN, &map) == 0 || errno != ENOTTY)
		return errno == EOPNOTSUPP ? (snprintf(why, len, "this kernel is built without "
								 "CONFIG_FUSE_PASSTHROUGH"), -1) : 0;
	snprintf(why, len, "this kernel has no FUSE passthrough (Linux 6.9 or later)");
	return -1;
}

int passthrough_offered(uint64_t init_flags)
{
	return (init_flags & PT_INIT_PASSTHROUGH) != 0;
}

static void put32(struct iovec *v, size_t at, uint32_t x)
{
	memcpy((char *)v->iov_base + at, &x, sizeof(x));
}

static uint32_t get32(const struct iovec *v, size_t at)
{
	uint32_t x;

	memcpy(&x, (const char *)v->iov_base + at, sizeof(x));
	return x;
}

void passthrough_ask_init(struct iovec *iov, int count)
{
	if (count < 2 || iov[1].iov_len < PT_INIT_STACK_DEPTH_AT + 4)
		return;
	put32(&iov[1], PT_INIT_FLAGS_AT, get32(&iov[1], PT_INIT_FLAGS_AT) | PT_INIT_EXT);
	put32(&iov[1], PT_INIT_FLAGS2_AT,
	      get32(&iov[1], PT_INIT_FLAGS2_AT) | (uint32_t)(PT_INIT_PASSTHROUGH >> 32));
	/* the backing files are memfds, on no stacked filesystem */
	put32(&iov[1], PT_INIT_STACK_DEPTH_AT, 1);
}

void passthrough_set_fd(int fd)
{
	fuse_fd = fd;
}

int passthrough_register(int fd)
{
	struct pt_backing_map map = { .fd = fd };
	int id = ioctl(fuse_fd, PT_IOC_BACKING_OPEN, &map);

	return id > 0 ? id : id == 0 ? -EIO : -errno;
}

void passthrough_unregister(int id)
{
	uint32_t u = (uint32_t)id;

	if (id > 0)
		ioctl(fuse_fd, PT_IOC_BACKING_CLOSE, &u);
}

void passthrough_reply_next(int id)
{
	next_id = id;
}

void passthrough_patch_open(struct iovec *iov, int count)
{
	int id = next_id;

	next_id = 0;
	if (!id || count < 2 || iov[1].iov_len != PT_OPEN_OUT_SIZE)
		return;
	put32(&iov[1], PT_OPEN_FLAGS_AT,
	      (get32(&iov[1], PT_OPEN_FLAGS_AT) | PT_FOPEN_PASSTHROUGH) & ~PT_DIRECT_IO);
	put32(&iov[1], PT_OPEN_BACKING_AT, (uint32_t)id);
}
