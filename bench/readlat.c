/* readlat MODE PATH COUNT: the median time, in ns, of COUNT reads of PATH.
 * MODE "orc": open, read to the end, close (as cat does); "pread": one open,
 * then pread of the first 4 KiB at offset 0 (as top's kept-open files are
 * read). Prints "median_ns bytes" of the last read. Built by the bench
 * scripts; not part of procfast. */
#include <fcntl.h>
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

int main(int argc, char **argv)
{
	static char buf[65536];
	int count, fd = -1, orc;
	long long *t;
	ssize_t got = 0;

	if (argc != 4 || (count = atoi(argv[3])) <= 0 ||
	    (strcmp(argv[1], "orc") && strcmp(argv[1], "pread"))) {
		fprintf(stderr, "usage: readlat orc|pread PATH COUNT\n");
		return 2;
	}
	orc = !strcmp(argv[1], "orc");
	t = calloc((size_t)count, sizeof(*t));
	if (!t || (!orc && (fd = open(argv[2], O_RDONLY | O_CLOEXEC)) < 0)) {
		perror(argv[2]);
		return 1;
	}
	for (int i = 0; i < count; i++) {
		long long start = now_ns();

		got = orc ? open_read_close(argv[2], buf, sizeof(buf)) : pread(fd, buf, 4096, 0);
		t[i] = now_ns() - start;
		if (got < 0) {
			perror(argv[2]);
			return 1;
		}
	}
	qsort(t, (size_t)count, sizeof(*t), cmp);
	printf("%lld %zd\n", t[count / 2], got);
	return 0;
}
