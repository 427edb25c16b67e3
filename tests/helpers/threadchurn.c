/*
 * threadchurn: threads created and ended as fast as one process can, for
 * listings and lookups measured under load (bench/churn.sh, tests/index).
 *
 *   threadchurn SECONDS [LIVE]
 *
 * Keeps LIVE threads (default 64) alive, each replaced as soon as it ends:
 * every thread exits at once and the main thread joins it and starts the
 * next, so the process's task/ changes all the time. SECONDS 0 runs until
 * killed (SIGTERM or SIGINT: it prints its rate, then exits). Prints
 *   "N threads in S s: R/s"
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void *quit(void *unused)
{
	return unused;
}

static double since(const struct timespec *a)
{
	struct timespec b;

	clock_gettime(CLOCK_MONOTONIC, &b);
	return (double)(b.tv_sec - a->tv_sec) + (double)(b.tv_nsec - a->tv_nsec) / 1e9;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 1;
	long live = argc > 2 ? atol(argv[2]) : 64;
	struct sigaction sa = { .sa_handler = on_signal };
	pthread_attr_t attr;
	pthread_t *t;
	struct timespec a;
	long made = 0;

	if (argc < 2 || live < 1 || !(t = calloc((size_t)live, sizeof(*t)))) {
		fprintf(stderr, "usage: threadchurn SECONDS [LIVE]\n");
		return 2;
	}
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (long i = 0; i < live; i++)
		if (pthread_create(&t[i], &attr, quit, NULL) == 0)
			made++;
	for (long i = 0; !stop && (seconds <= 0 || since(&a) < seconds); i = (i + 1) % live) {
		pthread_join(t[i], NULL);
		if (pthread_create(&t[i], &attr, quit, NULL)) {
			perror("pthread_create");
			return 1;
		}
		made++;
	}
	for (long i = 0; i < live; i++)
		pthread_join(t[i], NULL);
	double s = since(&a);
	printf("%ld threads in %.3f s: %.0f/s\n", made, s, (double)made / s);
	return 0;
}
