/*
 * forker: start and reap short-lived processes as fast as it can.
 *
 *   forker COUNT [--vfork]
 *
 * COUNT times: fork (or vfork), the child _exits at once, the parent reaps it.
 * COUNT 0 runs until killed. Prints "COUNT forks in S s: R/s" on stdout.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* One child, in a frame of its own so vfork cannot clobber the caller's. */
static __attribute__((noinline)) pid_t spawn(int use_vfork)
{
	pid_t p = use_vfork ? vfork() : fork();

	if (p == 0)
		_exit(0);
	return p;
}

int main(int argc, char **argv)
{
	long count = argc > 1 ? atol(argv[1]) : 1000;
	int use_vfork = argc > 2 && !strcmp(argv[2], "--vfork");
	struct timespec a, b;

	clock_gettime(CLOCK_MONOTONIC, &a);
	for (long i = 0; count == 0 || i < count; i++) {
		pid_t p = spawn(use_vfork);

		if (p < 0) {
			perror("fork");
			return 1;
		}
		waitpid(p, NULL, 0);
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	double s = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
	printf("%ld forks in %.3f s: %.0f/s\n", count, s, (double)count / s);
	return 0;
}
