/*
 * stattime: median wall time of looking up many processes' files.
 *
 *   stattime DIR REPEAT [FILE]
 *
 * Lists DIR once (untimed) for its numeric names, then REPEAT times stats
 * DIR/PID/FILE (default "status") for every PID, one pass each. Prints
 * "median_pass_us min_pass_us pids failed" (failed: stats of the last pass
 * that failed, processes gone meanwhile). The first pass on a new mount is a
 * cold one (no dentries yet); later ones find the kernel's.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	int repeat = argc > 2 ? atoi(argv[2]) : 1;
	const char *file = argc > 3 ? argv[3] : "status";
	double *t = calloc((size_t)(repeat > 0 ? repeat : 1), sizeof(double));
	char (*paths)[320] = NULL;
	size_t n = 0, cap = 0;
	long failed = 0;
	struct dirent *de;
	DIR *d;

	if (argc < 3 || repeat < 1 || !t || !(d = opendir(argv[1]))) {
		fprintf(stderr, "usage: stattime DIR REPEAT [FILE]\n");
		return 2;
	}
	while ((de = readdir(d))) {
		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		if (n == cap) {
			void *more = realloc(paths, (cap = cap ? cap * 2 : 256) * sizeof(*paths));

			if (!more) {
				free(paths);
				return 1;
			}
			paths = more;
		}
		snprintf(paths[n++], sizeof(*paths), "%s/%s/%s", argv[1], de->d_name, file);
	}
	closedir(d);
	for (int i = 0; i < repeat; i++) {
		struct timespec a, b;
		struct stat st;

		failed = 0;
		clock_gettime(CLOCK_MONOTONIC, &a);
		for (size_t j = 0; j < n; j++)
			failed += stat(paths[j], &st) != 0;
		clock_gettime(CLOCK_MONOTONIC, &b);
		t[i] = (double)(b.tv_sec - a.tv_sec) * 1e6 + (double)(b.tv_nsec - a.tv_nsec) / 1e3;
	}
	qsort(t, (size_t)repeat, sizeof(double), cmp);
	printf("%.1f %.1f %zu %ld\n", t[repeat / 2], t[0], n, failed);
	return 0;
}
