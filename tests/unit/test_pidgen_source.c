/* cache/index/pidgen.c without pidfs: what it reads of a task. No mount:
 * the "procfs" is a scratch tree whose files say which one was read.
 *
 * For a leader, procfs's PID/stat is the whole group's: the kernel walks
 * every thread for its times (thread_group_cputime), so one look at each of
 * a process's 10,000 threads cost 10,000² thread visits (pstree -p: 99 s
 * against 6 s). The task's own PID/task/PID/stat has the same state, flags
 * and start time; the tree gives the two different values, and the test
 * asserts pidgen read the task's own. */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache/index/pidgen.h"

#define PF_EXITING 0x4

static void put(int dir, const char *path, const char *text)
{
	FILE *f;
	int fd = openat(dir, path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	assert(fd >= 0 && (f = fdopen(fd, "w")));
	assert(fputs(text, f) >= 0 && fclose(f) == 0);
}

/* A stat line whose state, flags (field 9) and start time (field 22) are given. */
static void put_stat(int dir, const char *path, char state, unsigned flags, unsigned long long start)
{
	char line[512];

	snprintf(line, sizeof(line),
		 "%s (a b) %c 1 1 1 0 -1 %u 0 0 0 0 0 0 0 0 20 0 1 0 %llu 0 0 0\n", "7", state,
		 flags, start);
	put(dir, path, line);
}

int main(void)
{
	char tmpl[] = "/tmp/pidgen-XXXXXX";
	int dir;
	uint64_t gen;

	assert(mkdtemp(tmpl));
	dir = open(tmpl, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert(dir >= 0);
	assert(mkdirat(dir, "7", 0755) == 0 && mkdirat(dir, "7/task", 0755) == 0 &&
	       mkdirat(dir, "7/task/7", 0755) == 0);
	/* the group's: running, not exiting, one start; the task's: exiting, a zombie, another */
	put_stat(dir, "7/stat", 'S', 0, 1000);
	put_stat(dir, "7/task/7/stat", 'Z', PF_EXITING, 2000);

	pidgen_init(dir, 0); /* not the daemon's pids: the start time, never pidfs */
	pidgen_begin();
	assert(pidgen_get(7, &gen) == 0 && gen == 2000);
	assert(pidgen_exited(7) == 1);
	assert(pidgen_exiting(7) == 1);

	/* and a task with no file of its own is gone, whatever the group's says */
	assert(unlinkat(dir, "7/task/7/stat", 0) == 0);
	pidgen_begin();
	assert(pidgen_get(7, &gen) == -ENOENT);
	assert(pidgen_exiting(7) == 1);

	unlinkat(dir, "7/stat", 0);
	unlinkat(dir, "7/task/7", AT_REMOVEDIR);
	unlinkat(dir, "7/task", AT_REMOVEDIR);
	unlinkat(dir, "7", AT_REMOVEDIR);
	rmdir(tmpl);
	close(dir);
	puts("pidgen source: ok");
	return 0;
}
