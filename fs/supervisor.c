/* The supervisor: the mount outlives the daemon that serves it.
 *
 * The process that mounted keeps the /dev/fuse session fd for the life of the
 * mount and serves through a child, the server. While any process holds that
 * fd the kernel keeps the connection: requests wait in its queue. If the
 * server dies (a crash, SIGKILL, the OOM killer), a new one is forked from the
 * supervisor's pristine state and serves the same connection, so the mount
 * and every bind of it in every container answer again instead of failing
 * with ENOTCONN as they would for LXCFS. Node ids the kernel still holds from
 * the dead server are answered ESTALE (stale.c) and looked up again.
 *
 * Each server reads through its own clones of the fd (libfuse's clone_fd):
 * when it dies, the requests it had taken end at once with ECONNABORTED
 * instead of waiting for an answer that cannot come.
 *
 * SIGHUP upgrades: the supervisor stops the server and executes the binary
 * installed at its own path again (a package upgrade replaced it), handing it
 * the session fd; the new supervisor resumes the connection instead of
 * mounting (supervisor_resume_fd).
 *
 * SIGTERM or SIGINT to the supervisor stop the server and unmount. A server
 * that exits by itself (the mount went away, or it was told to stop) ends the
 * supervisor too. Five deaths within ten seconds are taken as a fault that a
 * restart cannot mend: the supervisor unmounts and exits 1.
 */
#include "fs/supervisor.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/fuse.h>

#include "fs/log.h"

#define MAX_DEATHS 5
#define RESUME_ENV "PROCFAST_RESUME_FD"
#define DEATH_WINDOW_S 10

/* Shared with the servers: set once a server answered the kernel's INIT. */
static _Atomic int *connection_ready;

void supervisor_connection_ready(void)
{
	if (connection_ready)
		atomic_store(connection_ready, 1);
}

/* The kernel sends INIT once per connection. libfuse refuses every request
 * before it saw one, so a resumed server feeds it one with what the kernel
 * offers; its answer goes to a request id the kernel does not know, and the
 * kernel drops it (ENOENT, which libfuse does not report). */
void supervisor_replay_init(struct fuse_session *se)
{
	struct {
		struct fuse_in_header h;
		struct fuse_init_in in;
	} msg = {
		.h = { .len = sizeof(msg), .opcode = FUSE_INIT, .unique = 1ULL << 62 },
		.in = { .major = FUSE_KERNEL_VERSION, .minor = FUSE_KERNEL_MINOR_VERSION,
			.max_readahead = 128 * 1024,
			.flags = FUSE_ASYNC_READ | FUSE_ATOMIC_O_TRUNC | FUSE_BIG_WRITES |
				 FUSE_DONT_MASK | FUSE_AUTO_INVAL_DATA | FUSE_PARALLEL_DIROPS |
				 FUSE_MAX_PAGES },
	};
	struct fuse_buf buf = { .mem = &msg, .size = sizeof(msg) };

	fuse_session_process_buf(se, &buf);
}

int supervisor_resume_fd(void)
{
	const char *v = getenv(RESUME_ENV);
	int fd = v ? atoi(v) : -1;

	unsetenv(RESUME_ENV);
	if (fd >= 0 && fcntl(fd, F_SETFD, FD_CLOEXEC) == 0)
		return fd;
	return -1;
}

/* Executes the binary at our own path, keeping the session fd open. Returns
 * only if that failed. */
static void upgrade(struct fuse_session *se, char **argv)
{
	char exe[PATH_MAX], fd[16], *deleted;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	int sfd = fuse_session_fd(se);

	if (n <= 0)
		return;
	exe[n] = '\0';
	/* Replaced by a package upgrade: the new file is at the old path. */
	if ((deleted = strstr(exe, " (deleted)")) && !deleted[10])
		*deleted = '\0';
	snprintf(fd, sizeof(fd), "%d", sfd);
	if (fcntl(sfd, F_SETFD, 0) || setenv(RESUME_ENV, fd, 1))
		return;
	log_info("upgrading: executing %s", exe);
	execv(exe, argv);
	log_err("cannot execute %s: %s", exe, strerror(errno));
	unsetenv(RESUME_ENV);
	fcntl(sfd, F_SETFD, FD_CLOEXEC);
}

static sigset_t handled_signals(void)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGCHLD);
	return set;
}

static pid_t start_server(const sigset_t *old)
{
	pid_t pid = fork();

	if (pid == 0)
		sigprocmask(SIG_SETMASK, old, NULL);
	else if (pid < 0)
		log_err("cannot start a server: %s", strerror(errno));
	return pid;
}

/* Too many deaths in a short time: restarting would not help. */
static int too_many_deaths(void)
{
	static time_t deaths[MAX_DEATHS];
	static int next;
	time_t now = time(NULL);
	int recent = 0;

	deaths[next] = now;
	next = (next + 1) % MAX_DEATHS;
	for (int i = 0; i < MAX_DEATHS; i++)
		recent += deaths[i] && now - deaths[i] < DEATH_WINDOW_S;
	return recent >= MAX_DEATHS;
}

static void describe_death(pid_t pid, int wstatus)
{
	if (WIFSIGNALED(wstatus))
		log_err("server %d killed by signal %d: starting another", pid, WTERMSIG(wstatus));
	else
		log_err("server %d exited with %d: starting another", pid, WEXITSTATUS(wstatus));
}

/* The kernel says POLLERR on the session fd once the mount is gone (unmounted,
 * or its connection aborted): nothing is left to serve. */
static int connection_gone(int fd)
{
	struct pollfd p = { .fd = fd, .events = 0 };

	return poll(&p, 1, 0) == 1 && (p.revents & POLLERR);
}

/* Waits for the server or a signal; 1 when the server ended the mount,
 * -1 when it died and must be replaced, 0 to upgrade. */
static int watch(struct fuse_session *se, pid_t server, const sigset_t *set, int *status)
{
	siginfo_t si;
	int wstatus;

	for (;;) {
		if (sigwaitinfo(set, &si) < 0)
			continue;
		if (si.si_signo != SIGCHLD) {
			kill(server, SIGTERM);
			if (si.si_signo == SIGHUP) {
				waitpid(server, NULL, 0);
				return 0;
			}
			continue;
		}
		if (waitpid(server, &wstatus, WNOHANG) != server)
			continue;
		if ((WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) ||
		    connection_gone(fuse_session_fd(se))) {
			*status = 0;
			return 1;
		}
		describe_death(server, wstatus);
		if (too_many_deaths()) {
			log_err("servers keep dying: giving up the mount");
			*status = 1;
			return 1;
		}
		return -1;
	}
}

enum supervisor_role supervisor_run(struct fuse_session *se, char **argv, int resumed,
				    int *status)
{
	sigset_t set = handled_signals(), old;
	pid_t server;
	int r;

	connection_ready = mmap(NULL, sizeof(*connection_ready), PROT_READ | PROT_WRITE,
				MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (connection_ready == MAP_FAILED) {
		/* Serving here instead would leave the mount to a process that
		 * believes a supervisor unmounts it: give the mount up. */
		log_err("cannot start the supervisor: %s", strerror(errno));
		connection_ready = NULL;
		*status = 1;
		return SUPERVISOR_DONE;
	}
	atomic_store(connection_ready, resumed);
	sigprocmask(SIG_BLOCK, &set, &old);
	for (;;) {
		int set_up = atomic_load(connection_ready);

		server = start_server(&old);
		if (server == 0)
			return set_up ? SERVE_RESUMED : SERVE_FIRST;
		if (server < 0) {
			*status = 1;
			break;
		}
		r = watch(se, server, &set, status);
		if (r > 0)
			break;
		if (r == 0) {
			sigprocmask(SIG_SETMASK, &old, NULL);
			upgrade(se, argv);
			sigprocmask(SIG_BLOCK, &set, &old);
		}
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
	return SUPERVISOR_DONE;
}
