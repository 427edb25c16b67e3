/* readlat MODE PATH COUNT [moves]: the median time, in ns, of COUNT reads of
 * PATH. MODE "orc": open, read to the end, close (as cat does); "pread": one
 * open, then pread of the first 4 KiB at offset 0 (as top's kept-open files
 * are read). Prints "median_ns bytes" of the last read; with "moves" also how
 * many reads ended on another CPU than they began on, and the medians of the
 * reads that stayed and of those that moved (0 when none): "median_ns bytes
 * moved stayed_ns moved_ns" (bench/placement.sh). Built by the bench scripts;
 * not part of procfast. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;

	return (x > y) - (x < y);
}

static ssize_t open_read_close(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n, total = 0;

	if (fd < 0)
		return -1;
	while ((n = read(fd, buf, size)) > 0)
		total += n;
	close(fd);
	return n < 0 ? -1 : total;
}

static long long median(long long *t, int n)
{
	if (n <= 0)
		return 0;
	qsort(t, (size_t)n, sizeof(*t), cmp);
	return t[n / 2];
}

int main(int argc, char **argv)
{
	static char buf[65536];
	int count, fd = -1, orc, moves, nmoved = 0, nstayed = 0;
	long long *t, *stayed, *moved;
	ssize_t got = 0;

	if ((argc != 4 && argc != 5) || (count = atoi(argv[3])) <= 0 ||
	    (strcmp(argv[1], "orc") && strcmp(argv[1], "pread")) ||
	    (argc == 5 && strcmp(argv[4], "moves"))) {
		fprintf(stderr, "usage: readlat orc|pread PATH COUNT [moves]\n");
		return 2;
	}
	orc = !strcmp(argv[1], "orc");
	moves = argc == 5;
	t = calloc((size_t)count, sizeof(*t));
	stayed = calloc((size_t)count, sizeof(*t));
	moved = calloc((size_t)count, sizeof(*t));
	if (!t || !stayed || !moved || (!orc && (fd = open(argv[2], O_RDONLY | O_CLOEXEC)) < 0)) {
		perror(argv[2]);
		return 1;
	}
	for (int i = 0; i < count; i++) {
		int cpu = sched_getcpu();
		long long start = now_ns();

		got = orc ? open_read_close(argv[2], buf, sizeof(buf)) : pread(fd, buf, 4096, 0);
		t[i] = now_ns() - start;
		if (got < 0) {
			perror(argv[2]);
			return 1;
		}
		if (sched_getcpu() == cpu)
			stayed[nstayed++] = t[i];
		else
			moved[nmoved++] = t[i];
	}
	printf("%lld %zd", median(t, count), got);
	if (moves)
		printf(" %d %lld %lld", nmoved, median(stayed, nstayed), median(moved, nmoved));
	printf("\n");
	return 0;
}
