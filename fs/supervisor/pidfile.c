#include "fs/supervisor/pidfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fs/lib/cleanup.h"
#include "fs/lib/log.h"

int pidfile_write(const char *path)
{
	char tmp[4096], line[24];
	int len;

	if (!path)
		return 0;
	if (snprintf(tmp, sizeof(tmp), "%s.%d", path, (int)getpid()) >= (int)sizeof(tmp))
		return log_err("pidfile=%s: %s", path, strerror(ENAMETOOLONG)), -1;
	__do_close int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	len = snprintf(line, sizeof(line), "%d\n", (int)getpid());
	if (fd < 0 || write(fd, line, (size_t)len) != len || rename(tmp, path)) {
		log_err("pidfile=%s: %s", path, strerror(errno));
		unlink(tmp);
		return -1;
	}
	return 0;
}
