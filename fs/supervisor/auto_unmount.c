/* The watcher of auto_unmount's socket (auto_unmount.h). */
#include "fs/supervisor/auto_unmount.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "fs/lib/log.h"

#define KNOWN_FDS 4096
#define RETRY_MS 100

static unsigned char open_before[KNOWN_FDS];

static void each_fd(void (*fn)(int fd))
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.' && atoi(e->d_name) != dirfd(d))
			fn(atoi(e->d_name));
	closedir(d);
}

static void mark(int fd)
{
	if (fd >= 0 && fd < KNOWN_FDS)
		open_before[fd] = 1;
}

void auto_unmount_before_mount(void)
{
	each_fd(mark);
}

static int found_socket = -1;

static void find_new_socket(int fd)
{
	struct stat st;

	if (fd >= 0 && fd < KNOWN_FDS && !open_before[fd] && !fstat(fd, &st) && S_ISSOCK(st.st_mode))
		found_socket = fd;
}

/* Whether the mount point answers as a dead connection, or is no longer the
 * mount of device dev (unmounted) or is served (open succeeds on it). */
static int settled(const char *mountpoint, dev_t dev)
{
	int fd = open(mountpoint, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct stat st;

	if (fd < 0) /* ECONNABORTED: asked before the kernel ended the connection */
		return errno != ECONNABORTED && errno != EINTR;
	/* still served: only by another process (a server the supervisor left) */
	if (fstat(fd, &st) || st.st_dev != dev) {
		close(fd);
		return 1; /* not our mount any more */
	}
	close(fd);
	return 0;
}

static void watch(int parent, int sock, const char *mountpoint, dev_t dev)
{
	struct pollfd p = { .fd = parent, .events = POLLIN };

	int s = fcntl(sock, F_DUPFD, 10), d = fcntl(parent, F_DUPFD, 10);

	prctl(PR_SET_NAME, "procfast-unmnt");
	/* nothing of the daemon's: above all not /dev/fuse */
	if (s < 0 || d < 0 || dup2(s, 3) < 0 || dup2(d, 4) < 0 || syscall(SYS_close_range, 5, ~0U, 0))
		_exit(1);
	p.fd = 4;
	while (poll(&p, 1, -1) < 0 && errno == EINTR)
		;
	while (!settled(mountpoint, dev))
		nanosleep(&(struct timespec){ 0, RETRY_MS * 1000000L }, NULL);
	_exit(0); /* closes the socket: fusermount3 looks now, and sees ENOTCONN */
}

/* The device of the mount at mountpoint, from mountinfo: a stat of it would
 * wait for this very process to answer. */
static int mount_dev(const char *mountpoint, dev_t *dev)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[4096], point[4096];
	unsigned maj, min;
	int found = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%*s %*s %u:%u %*s %4095s", &maj, &min, point) == 3 &&
		    !strcmp(point, mountpoint)) {
			*dev = makedev(maj, min);
			found = 1; /* the last one: on top */
		}
	fclose(f);
	return found;
}

void auto_unmount_watch(const char *mountpoint)
{
	int parent = (int)syscall(SYS_pidfd_open, getpid(), 0);
	dev_t dev;
	pid_t pid;

	each_fd(find_new_socket);
	if (found_socket < 0 || parent < 0 || !mount_dev(mountpoint, &dev)) {
		log_warn("auto_unmount: no socket to watch: its helper keeps libfuse's way");
		if (parent >= 0)
			close(parent);
		return;
	}
	pid = fork();
	if (pid == 0)
		watch(parent, found_socket, mountpoint, dev);
	close(parent);
	if (pid < 0) {
		log_warn("auto_unmount: cannot start its watcher: %s", strerror(errno));
		return;
	}
	close(found_socket); /* the watcher's now */
}
