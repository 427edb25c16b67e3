/*
 * walker: one monitoring-agent-like reader of a procfs tree.
 *
 *   walker DIR SECONDS
 *
 * Until SECONDS have passed: list DIR, and for every numeric entry stat DIR/PID
 * and read DIR/PID/stat. Prints "VISITS SECONDS VISITS_PER_S" (a visit is one
 * process stat+read; failures of vanished processes count as visits too).
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double secs = argc > 2 ? atof(argv[2]) : 3, start = now(), end = start + secs;
	long visits = 0;
	char path[512], buf[4096];

	if (argc < 3)
		return 2;
	while (now() < end) {
		DIR *d = opendir(argv[1]);
		struct dirent *de;

		if (!d) {
			perror(argv[1]);
			return 1;
		}
		while ((de = readdir(d))) {
			struct stat st;

			if (de->d_name[0] < '1' || de->d_name[0] > '9')
				continue;
			snprintf(path, sizeof(path), "%s/%s", argv[1], de->d_name);
			stat(path, &st);
			snprintf(path, sizeof(path), "%s/%s/stat", argv[1], de->d_name);
			int fd = open(path, O_RDONLY | O_CLOEXEC);
			if (fd >= 0) {
				if (read(fd, buf, sizeof(buf)) < 0)
					buf[0] = 0;
				close(fd);
			}
			visits++;
		}
		closedir(d);
	}
	double took = now() - start;
	printf("%ld %.3f %.0f\n", visits, took, (double)visits / took);
	return 0;
}
