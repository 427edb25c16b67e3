/*
 * matrix_target: a target process for tests/access/test_access_matrix.py.
 *
 *   matrix_target [--nondumpable] [--setresgid] [--zombie] [--thread-ids ID]
 *                 [--leader-ids ID]
 *
 * Holds one fd of each common kind (a directory, /dev/null, a pipe, a socket pair, an
 * inet socket, an eventfd, a memfd that is also mapped) and starts one thread named
 * "target-t" that blocks forever; and with
 *   --nondumpable  prctl(PR_SET_DUMPABLE, 0), as sshd or a setuid program does;
 *   --setresgid    sets all three gids to its effective gid: run as a setgid binary,
 *                  it ends as a process that changed its gid (and, from the exec,
 *                  non-dumpable); exits 2 if it was not run so (rgid == egid);
 *   --zombie       forks a child that exits at once and is never reaped;
 *   --thread-ids ID  the thread takes uid and gid ID for itself alone (raw setresuid
 *                  and setresgid: glibc's would change every thread's), and the
 *                  process stays dumpable, so that procfs owns the thread's
 *                  directories by ID and the leader's by the ids it was started with;
 *   --leader-ids ID  the same for the leader alone.
 * Prints one JSON line {"pid":P,"tid":T,"zombie":Z} (Z 0 without --zombie) once
 * everything is in place, then waits until stdin reaches EOF and exits 0.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

static pid_t thread_tid;
static pthread_barrier_t started;
static long thread_ids = -1, leader_ids = -1; /* --thread-ids, --leader-ids */

static void die(const char *what)
{
	perror(what);
	exit(1);
}

/* The calling thread's own ids (raw calls: glibc's would change every thread's). */
static void take_own_ids(long id)
{
	if (syscall(SYS_setresgid, id, id, id) < 0 || syscall(SYS_setresuid, id, id, id) < 0 ||
	    prctl(PR_SET_DUMPABLE, 1) < 0) /* the change of euid made it not dumpable */
		die("own ids");
}

static void *thread_main(void *arg)
{
	(void)arg;
	thread_tid = (pid_t)syscall(SYS_gettid);
	if (thread_ids >= 0)
		take_own_ids(thread_ids);
	pthread_barrier_wait(&started);
	for (;;)
		pause();
	return NULL;
}

static void open_fds(void)
{
	int fds[2];

	if (open("/", O_RDONLY | O_DIRECTORY) < 0 || open("/dev/null", O_RDWR) < 0)
		die("open");
	if (pipe(fds) < 0 || socketpair(AF_UNIX, SOCK_STREAM, 0, fds) < 0)
		die("pipe/socketpair");
	if (socket(AF_INET, SOCK_DGRAM, 0) < 0 || eventfd(0, 0) < 0)
		die("socket/eventfd");
	int mem = memfd_create("matrix-target", 0);
	if (mem < 0 || ftruncate(mem, 4096) < 0)
		die("memfd");
	if (mmap(NULL, 4096, PROT_READ, MAP_SHARED, mem, 0) == MAP_FAILED)
		die("mmap");
}

/* One more thread, so that task/ holds a thread other than the leader. */
static void start_thread(void)
{
	pthread_t t;

	if (pthread_barrier_init(&started, NULL, 2))
		die("pthread_barrier_init");
	if (pthread_create(&t, NULL, thread_main, NULL))
		die("pthread_create");
	if (pthread_setname_np(t, "target-t"))
		die("pthread_setname_np");
	pthread_barrier_wait(&started);
}

/* Sleeps in poll() (state S) until stdin reaches EOF. */
static void wait_for_eof(void)
{
	for (;;) {
		struct pollfd p = {.fd = 0, .events = POLLIN};
		char buf[256];

		if (poll(&p, 1, -1) < 0) {
			if (errno == EINTR)
				continue;
			die("poll");
		}
		if (p.revents & POLLNVAL)
			return;
		ssize_t n = read(0, buf, sizeof(buf));
		if (n == 0 || (n < 0 && errno != EINTR))
			return;
	}
}

/* Sets rgid and sgid to the egid a setgid binary gave us. */
static void take_egid(void)
{
	gid_t egid = getegid();

	if (getgid() == egid) {
		fprintf(stderr, "matrix_target: --setresgid needs a setgid binary\n");
		exit(2);
	}
	if (setresgid(egid, egid, egid) < 0)
		die("setresgid");
}

/* A child that exits at once; returns its pid once it is a zombie. */
static pid_t make_zombie(void)
{
	char path[64], state = 0;
	pid_t child = fork();

	if (child < 0)
		die("fork");
	if (child == 0)
		_exit(0);
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)child);
	while (state != 'Z') {
		char buf[512];
		FILE *f = fopen(path, "r");
		if (!f || !fgets(buf, sizeof(buf), f))
			die("zombie stat");
		fclose(f);
		char *p = strrchr(buf, ')');
		state = p && p[1] ? p[2] : 0;
		if (state != 'Z')
			usleep(1000);
	}
	return child;
}

int main(int argc, char **argv)
{
	int nondumpable = 0, set_gid = 0, zombie = 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--nondumpable"))
			nondumpable = 1;
		else if (!strcmp(argv[i], "--setresgid"))
			set_gid = 1;
		else if (!strcmp(argv[i], "--zombie"))
			zombie = 1;
		else if (!strcmp(argv[i], "--thread-ids") && i + 1 < argc)
			thread_ids = strtol(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--leader-ids") && i + 1 < argc)
			leader_ids = strtol(argv[++i], NULL, 10);
		else {
			fprintf(stderr, "usage: matrix_target [--nondumpable] [--setresgid] [--zombie] "
					"[--thread-ids ID] [--leader-ids ID]\n");
			return 2;
		}
	}
	if (set_gid)
		take_egid();
	if (nondumpable && prctl(PR_SET_DUMPABLE, 0) < 0)
		die("prctl");
	open_fds();

	start_thread();
	if (leader_ids >= 0)
		take_own_ids(leader_ids);
	pid_t z = zombie ? make_zombie() : 0;

	printf("{\"pid\":%d,\"tid\":%d,\"zombie\":%d}\n", (int)getpid(), (int)thread_tid, (int)z);
	if (fflush(stdout) != 0)
		die("fflush");
	wait_for_eof();
	return 0;
}
