/*
 * threads: one process with many idle threads (16 KiB stacks carved from one
 * mapping, so 100,000 threads need one VMA and no per-thread guard pages).
 *
 *   threads N [--leader-exit | --exec-thread | --hold]
 *
 * Starts N threads blocked forever, prints one JSON line
 *   {"pid": P, "threads": N, "exec_tid": T}
 * and then:
 *   (default)      exits 0 when stdin reaches EOF;
 *   --hold         waits until killed (benchmarks);
 *   --leader-exit  the leader calls pthread_exit; a thread exits the group at EOF;
 *   --exec-thread  thread T (not the leader) waits for one line on stdin, then
 *                  execve()s this program as "threads 0" (it prints its JSON
 *                  line again, same pid, and exits at EOF).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define STACK (16 * 1024)

static char **args;

static void *idle(void *unused)
{
	(void)unused;
	for (;;)
		pause();
	return NULL;
}

static void wait_eof(void)
{
	char buf[256];

	while (read(0, buf, sizeof(buf)) > 0)
		;
}

static void *exit_at_eof(void *unused)
{
	(void)unused;
	wait_eof();
	exit(0);
}

static void *exec_on_line(void *unused)
{
	char buf[256];
	char exe[4096];
	char *argv[] = { args[0], "0", NULL };
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	(void)unused;
	if (n <= 0 || read(0, buf, sizeof(buf)) <= 0)
		exit(0);
	exe[n] = 0;
	execv(exe, argv);
	perror("execv");
	exit(1);
}

static pthread_t start(void *(*fn)(void *), void *stack)
{
	pthread_attr_t attr;
	pthread_t t;
	int r;

	pthread_attr_init(&attr);
	pthread_attr_setstack(&attr, stack, STACK);
	r = pthread_create(&t, &attr, fn, NULL);
	pthread_attr_destroy(&attr);
	if (r) {
		fprintf(stderr, "pthread_create: %s\n", strerror(r));
		exit(1);
	}
	return t;
}

/* The thread's kernel tid, published through a pipe by the thread itself. */
static int tid_pipe[2];

static void *report_then(void *fn)
{
	pid_t tid = (pid_t)syscall(SYS_gettid);

	if (write(tid_pipe[1], &tid, sizeof(tid)) != sizeof(tid))
		exit(1);
	return ((void *(*)(void *))fn)(NULL);
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 0;
	const char *mode = argc > 2 ? argv[2] : "";
	char *stacks = mmap(NULL, (size_t)(n + 1) * STACK, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	pid_t special = 0;

	args = argv;
	if (stacks == MAP_FAILED || pipe(tid_pipe)) {
		perror("setup");
		return 1;
	}
	for (long i = 0; i < n; i++)
		start(idle, stacks + (size_t)i * STACK);
	if (!strcmp(mode, "--leader-exit") || !strcmp(mode, "--exec-thread")) {
		pthread_t t;
		pthread_attr_t attr;

		pthread_attr_init(&attr);
		pthread_attr_setstack(&attr, stacks + (size_t)n * STACK, STACK);
		if (pthread_create(&t, &attr, report_then,
				   (void *)(!strcmp(mode, "--leader-exit") ? exit_at_eof : exec_on_line)))
			return 1;
		if (read(tid_pipe[0], &special, sizeof(special)) != sizeof(special))
			return 1;
	}
	printf("{\"pid\": %d, \"threads\": %ld, \"exec_tid\": %d}\n", getpid(), n, special);
	fflush(stdout);
	if (!strcmp(mode, "--hold"))
		for (;;)
			pause();
	if (!strcmp(mode, "--exec-thread"))
		for (;;)
			pause(); /* the leader stays alive; T does the rest */
	if (special)
		pthread_exit(NULL); /* --leader-exit: a zombie leader, T lives on */
	wait_eof();
	return 0;
}
