/*
 * dirtime: median wall time of a full directory listing.
 *
 *   dirtime DIR REPEAT
 *
 * REPEAT times: open DIR, getdents64 with a 32 KiB buffer until the end, close.
 * Prints "median_us MIN_us entries" (entries of the last listing).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	int repeat = argc > 2 ? atoi(argv[2]) : 100;
	double *t = calloc((size_t)repeat, sizeof(double));
	static char buf[32768];
	long entries = 0;

	if (argc < 3 || !t || repeat < 1) {
		fprintf(stderr, "usage: dirtime DIR REPEAT\n");
		return 2;
	}
	for (int i = 0; i < repeat; i++) {
		struct timespec a, b;
		long n;

		clock_gettime(CLOCK_MONOTONIC, &a);
		int fd = open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0) {
			perror(argv[1]);
			return 1;
		}
		entries = 0;
		while ((n = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0)
			for (long pos = 0; pos < n; pos += *(unsigned short *)(buf + pos + 16))
				entries++;
		close(fd);
		clock_gettime(CLOCK_MONOTONIC, &b);
		t[i] = (double)(b.tv_sec - a.tv_sec) * 1e6 + (double)(b.tv_nsec - a.tv_nsec) / 1e3;
	}
	qsort(t, (size_t)repeat, sizeof(double), cmp);
	printf("%.1f %.1f %ld\n", t[repeat / 2], t[0], entries);
	return 0;
}
