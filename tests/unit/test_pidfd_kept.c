/* cache/index/pidgen.c with kept pidfds (pidfd_kept.h), on pidfs kernels
 * (6.9+; elsewhere the test says so and passes: nothing is kept there). No
 * mount: children of the test are the tasks asked about.
 *
 * A probe answered from a kept pidfd must be the one a fresh probe gives:
 * the same generation while the task runs; once it exited, exited (not the
 * running state of its pidfd's past), and the kept pidfd closed. Only
 * running tasks are kept, one a slot, and none near the fd limit. */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cache/index/pidfd_kept.h"
#include "cache/index/pidgen.h"

static pid_t child(void)
{
	pid_t pid = fork();

	assert(pid >= 0);
	if (pid == 0) {
		pause();
		_exit(0);
	}
	return pid;
}

/* What a fresh probe says: generation, or -ENOENT. */
static int fresh(pid_t pid, uint64_t *gen, int *exited)
{
	int r;

	pidfd_kept_destroy();
	assert(pidfd_kept_init(0) == 0);
	pidgen_begin();
	r = pidgen_get(pid, gen);
	*exited = pidgen_exited(pid);
	return r;
}

static void keep(unsigned slots)
{
	pidfd_kept_destroy();
	assert(pidfd_kept_init(slots) == 0);
}

int main(void)
{
	int proc = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
	uint64_t gen, want;
	int exited;
	pid_t a, b;

	assert(proc >= 0);
	pidgen_init(proc, 1);
	if (strcmp(pidgen_method(), "pidfs")) {
		puts("pidfd kept: no pidfs here (generations from start times): nothing kept");
		return 0;
	}
	a = child();
	assert(fresh(a, &want, &exited) == 0 && !exited);

	/* kept at the first probe, answered from it at the next: the same generation */
	keep(8);
	pidgen_begin();
	assert(pidgen_get(a, &gen) == 0 && gen == want);
	assert(pidfd_kept_count() == 1);
	pidgen_begin();
	assert(pidgen_get(a, &gen) == 0 && gen == want && !pidgen_exited(a));
	assert(pidfd_kept_count() == 1);

	/* a zombie: exited, as a fresh probe says, and its pidfd no longer kept */
	kill(a, SIGKILL);
	assert(waitid(P_PID, (id_t)a, NULL, WEXITED | WNOWAIT) == 0);
	pidgen_begin();
	assert(pidgen_exited(a) == 1 && pidgen_get(a, &gen) == 0 && gen == want);
	assert(pidfd_kept_count() == 0);

	/* reaped: gone */
	assert(waitpid(a, NULL, 0) == a);
	pidgen_begin();
	assert(pidgen_get(a, &gen) == -ENOENT && pidfd_kept_count() == 0);

	/* one slot: the next task asked about takes it, and the first is asked afresh */
	a = child();
	b = child();
	keep(1);
	pidgen_begin();
	assert(pidgen_get(a, &want) == 0 && pidfd_kept_count() == 1);
	pidgen_begin();
	assert(pidgen_get(b, &gen) == 0 && gen != want && pidfd_kept_count() == 1);
	pidgen_begin();
	assert(pidgen_get(a, &gen) == 0 && gen == want);

	/* near the fd limit nothing is kept: every fd left is the callers' */
	{
		struct rlimit was, low;

		keep(8);
		assert(getrlimit(RLIMIT_NOFILE, &was) == 0);
		low = was;
		low.rlim_cur = 64; /* the test's own fds are far below */
		assert(setrlimit(RLIMIT_NOFILE, &low) == 0);
		pidgen_begin();
		assert(pidgen_get(a, &gen) == 0 && gen == want && pidfd_kept_count() == 0);
		assert(setrlimit(RLIMIT_NOFILE, &was) == 0);
		pidgen_begin();
		assert(pidgen_get(a, &gen) == 0 && pidfd_kept_count() == 1);
	}

	kill(a, SIGKILL);
	kill(b, SIGKILL);
	waitpid(a, NULL, 0);
	waitpid(b, NULL, 0);
	pidfd_kept_destroy();
	close(proc);
	puts("pidfd kept: ok");
	return 0;
}
