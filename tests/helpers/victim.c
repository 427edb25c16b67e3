/*
 * victim: a test process with one of every kind of fd the mirror must handle.
 *
 *   victim [--threads N]      (default 4)
 *
 * Starts N threads named "victim-t<i>" that block forever, opens a regular file, a
 * deleted file, a pipe (both ends), a TCP listener on 127.0.0.1 (port 0), a unix
 * stream listener, an eventfd and a memfd, prints one JSON line describing them on
 * stdout, then waits until stdin reaches EOF or SIGTERM arrives, removes its files
 * and exits 0.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#define MAX_THREADS 256

static pid_t tids[MAX_THREADS + 1];
static pthread_barrier_t started;

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static pid_t my_tid(void)
{
	return (pid_t)syscall(SYS_gettid);
}

static void *thread_main(void *arg)
{
	long i = (long)arg;
	tids[i + 1] = my_tid();
	pthread_barrier_wait(&started);
	for (;;)
		pause(); /* SIGTERM is blocked here: only the main thread handles it */
	return NULL;
}

static void on_term(int sig)
{
	(void)sig; /* only interrupts ppoll() in main */
}

int main(int argc, char **argv)
{
	long nthreads = 4;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
			char *end;
			nthreads = strtol(argv[++i], &end, 10);
			if (*end || nthreads < 0 || nthreads > MAX_THREADS) {
				fprintf(stderr, "victim: bad thread count\n");
				return 2;
			}
		} else {
			fprintf(stderr, "usage: victim [--threads N]\n");
			return 2;
		}
	}

	/* Block SIGTERM everywhere (threads inherit the mask); main unblocks it in ppoll. */
	sigset_t term, old;
	sigemptyset(&term);
	sigaddset(&term, SIGTERM);
	if (sigprocmask(SIG_BLOCK, &term, &old) < 0)
		die("sigprocmask");
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_term;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGTERM, &sa, NULL) < 0)
		die("sigaction");
	sigdelset(&old, SIGTERM);

	pid_t pid = getpid();
	tids[0] = my_tid();

	if (pthread_barrier_init(&started, NULL, (unsigned)nthreads + 1))
		die("pthread_barrier_init");
	for (long i = 0; i < nthreads; i++) {
		pthread_t t;
		char name[32];
		if (pthread_create(&t, NULL, thread_main, (void *)i))
			die("pthread_create");
		snprintf(name, sizeof(name), "victim-t%d", (int)i); /* < 16 bytes: i <= 256 */
		if (pthread_setname_np(t, name))
			die("pthread_setname_np");
	}
	pthread_barrier_wait(&started);

	char file_path[64], deleted_path[64], unix_path[108];
	snprintf(file_path, sizeof(file_path), "/tmp/procfast-victim-%d.txt", (int)pid);
	snprintf(deleted_path, sizeof(deleted_path), "/tmp/procfast-victim-%d.deleted", (int)pid);
	snprintf(unix_path, sizeof(unix_path), "/tmp/procfast-victim-%d.sock", (int)pid);

	int file_fd = open(file_path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (file_fd < 0)
		die("open file");
	if (write(file_fd, "hello\n", 6) != 6)
		die("write file");

	int deleted_fd = open(deleted_path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (deleted_fd < 0)
		die("open deleted");
	if (write(deleted_fd, "deleted\n", 8) != 8)
		die("write deleted");
	if (unlink(deleted_path) < 0)
		die("unlink deleted");

	int pipefd[2];
	if (pipe(pipefd) < 0)
		die("pipe");

	int tcp_fd = socket(AF_INET, SOCK_STREAM, 0);
	if (tcp_fd < 0)
		die("socket tcp");
	struct sockaddr_in sin;
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sin.sin_port = 0;
	if (bind(tcp_fd, (struct sockaddr *)&sin, sizeof(sin)) < 0)
		die("bind tcp");
	if (listen(tcp_fd, 16) < 0)
		die("listen tcp");
	socklen_t slen = sizeof(sin);
	if (getsockname(tcp_fd, (struct sockaddr *)&sin, &slen) < 0)
		die("getsockname");

	int unix_fd = socket(AF_UNIX, SOCK_STREAM, 0);
	if (unix_fd < 0)
		die("socket unix");
	struct sockaddr_un sun;
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", unix_path);
	unlink(unix_path);
	if (bind(unix_fd, (struct sockaddr *)&sun, sizeof(sun)) < 0)
		die("bind unix");
	if (listen(unix_fd, 16) < 0)
		die("listen unix");

	int event_fd = eventfd(0, 0);
	if (event_fd < 0)
		die("eventfd");

	int mem_fd = memfd_create("procfast-victim", 0);
	if (mem_fd < 0)
		die("memfd_create");
	if (write(mem_fd, "memfd\n", 6) != 6)
		die("write memfd");

	printf("{\"pid\":%d,\"tids\":[", (int)pid);
	for (long i = 0; i <= nthreads; i++)
		printf("%s%d", i ? "," : "", (int)tids[i]);
	printf("],\"port\":%d,\"unix_path\":\"%s\",\"fds\":{\"file\":%d,\"deleted\":%d,"
	       "\"pipe_r\":%d,\"pipe_w\":%d,\"tcp\":%d,\"unix\":%d,\"eventfd\":%d,\"memfd\":%d}}\n",
	       ntohs(sin.sin_port), unix_path, file_fd, deleted_fd, pipefd[0], pipefd[1], tcp_fd,
	       unix_fd, event_fd, mem_fd);
	if (fflush(stdout) != 0)
		die("fflush");

	/* Wait for stdin EOF (or error) or SIGTERM. */
	for (;;) {
		struct pollfd p = {.fd = 0, .events = POLLIN};
		int r = ppoll(&p, 1, NULL, &old);
		if (r < 0) {
			if (errno == EINTR)
				break; /* SIGTERM */
			die("ppoll");
		}
		if (p.revents & POLLNVAL)
			break;
		if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
			char buf[256];
			ssize_t n = read(0, buf, sizeof(buf));
			if (n <= 0 && !(n < 0 && errno == EINTR))
				break;
		}
	}

	unlink(file_path);
	unlink(unix_path);
	return 0;
}
