/*
 * fdthreads: one process with T threads sharing F open files (issue 4, dedup).
 *
 *   fdthreads T F [--unshare] [--hold]
 *
 * Opens F descriptors (dups of /dev/null; RLIMIT_NOFILE is raised to fit) and
 * starts T threads blocked forever, all sharing the leader's file table. With
 * --unshare two more threads are started: "unshared" calls unshare(CLONE_FILES)
 * at once and then opens /dev/zero, which only its own table holds; "late"
 * shares the table until a line arrives on stdin, then does the same and the
 * process prints {"late_unshared": TID}. Prints one JSON line first:
 *   {"pid": P, "tids": [leader, ...], "unshared": U, "late": L, "fds": F}
 * (U and L are 0 without --unshare), then exits 0 at stdin EOF, or with --hold
 * waits until killed (benchmarks).
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#define STACK (64 * 1024)

static pid_t *tids;
static pthread_barrier_t started;
static int late_go[2], late_done[2];

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static void own_table(void)
{
	if (unshare(CLONE_FILES) || open("/dev/zero", O_RDONLY) < 0)
		die("unshare/open");
}

/* arg: slot in tids; kind 0 = sharer, 1 = unshares now, 2 = unshares on request */
struct role { long slot; int kind; };

static void *thread_main(void *arg)
{
	struct role *r = arg;
	char c;

	tids[r->slot] = (pid_t)syscall(SYS_gettid);
	if (r->kind == 1)
		own_table();
	pthread_barrier_wait(&started);
	if (r->kind == 2 && read(late_go[0], &c, 1) == 1) {
		own_table();
		if (write(late_done[1], &c, 1) != 1)
			die("write");
	}
	for (;;)
		pause();
	return NULL;
}

int main(int argc, char **argv)
{
	long nthreads = argc > 2 ? atol(argv[1]) : -1, nfds = argc > 2 ? atol(argv[2]) : -1;
	int unshared = 0, hold = 0;
	char line[256];

	for (int i = 3; i < argc; i++) {
		unshared |= !strcmp(argv[i], "--unshare");
		hold |= !strcmp(argv[i], "--hold");
	}
	if (nthreads < 0 || nfds < 0) {
		fprintf(stderr, "usage: fdthreads THREADS FDS [--unshare] [--hold]\n");
		return 2;
	}
	struct rlimit rl = { (rlim_t)nfds + 64, (rlim_t)nfds + 64 };
	if (setrlimit(RLIMIT_NOFILE, &rl) && nfds > 900)
		die("setrlimit");
	int null = open("/dev/null", O_RDONLY);
	for (long i = 1; i < nfds; i++) /* null itself is one of the F */
		if (dup(null) < 0)
			die("dup");
	if (pipe(late_go) || pipe(late_done))
		die("pipe");

	long total = nthreads + (unshared ? 2 : 0);
	struct role *roles = calloc((size_t)total, sizeof(*roles));
	tids = calloc((size_t)total + 1, sizeof(*tids));
	tids[0] = getpid();
	pthread_barrier_init(&started, NULL, (unsigned)total + 1);
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, STACK);
	for (long i = 0; i < total; i++) {
		pthread_t t;

		roles[i].slot = i + 1;
		roles[i].kind = unshared && i >= nthreads ? (int)(i - nthreads + 1) : 0;
		if (pthread_create(&t, &attr, thread_main, &roles[i]))
			die("pthread_create");
	}
	pthread_barrier_wait(&started);

	printf("{\"pid\": %d, \"tids\": [", getpid());
	for (long i = 0; i <= total; i++)
		printf("%s%d", i ? ", " : "", tids[i]);
	printf("], \"unshared\": %d, \"late\": %d, \"fds\": %ld}\n",
	       unshared ? tids[nthreads + 1] : 0, unshared ? tids[nthreads + 2] : 0, nfds);
	fflush(stdout);
	if (hold)
		for (;;)
			pause();
	while (fgets(line, sizeof(line), stdin)) {
		if (!unshared)
			continue;
		if (write(late_go[1], "x", 1) != 1 || read(late_done[0], line, 1) != 1)
			die("late");
		printf("{\"late_unshared\": %d}\n", tids[nthreads + 2]);
		fflush(stdout);
		unshared = 0;
	}
	return 0;
}
