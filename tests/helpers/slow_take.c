/* Preloaded into a daemon by tests/lifecycle/test_takeover.py: holds a
 * libfuse worker that took a request its caller waits for in the window between its read and its
 * look at the loop's exit flag (fuse_loop_mt.c sets its cancel state to
 * disabled right after each read), where a server that ended its session
 * while a worker was there dropped the request (ECONNABORTED to its
 * caller; once in a CI run). Each such worker waits there WINDOW_MS, and
 * once the server is told to stop (SIGTERM), until the loop ends (libfuse
 * cancels its workers as it sets the flag), or STOP_MS. */
#include <dlfcn.h>
#include <errno.h>
#include <linux/fuse.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define WINDOW_MS 10
#define STOP_MS 300
#define FUSE_MAJOR 10
#define FUSE_MINOR 229

static _Thread_local int took_request;
static atomic_int stopping, loop_ending;

static void *real_fn(const char *name)
{
	return dlsym(RTLD_NEXT, name);
}

static int is_fuse_device(int fd)
{
	struct stat st;

	return !fstat(fd, &st) && S_ISCHR(st.st_mode) &&
	       st.st_rdev == makedev(FUSE_MAJOR, FUSE_MINOR);
}

/* What a caller waits for: a drop of the others is never seen. */
static int caller_waits(uint32_t opcode)
{
	return opcode != FUSE_RELEASE && opcode != FUSE_RELEASEDIR && opcode != FUSE_FORGET &&
	       opcode != FUSE_BATCH_FORGET && opcode != FUSE_INTERRUPT;
}

ssize_t read(int fd, void *buf, size_t len)
{
	static ssize_t (*real)(int, void *, size_t);
	ssize_t n;
	int saved;

	if (!real)
		*(void **)&real = real_fn("read");
	n = real(fd, buf, len);
	saved = errno;
	if (n >= (ssize_t)sizeof(struct fuse_in_header) && is_fuse_device(fd))
		took_request = caller_waits(((const struct fuse_in_header *)buf)->opcode);
	errno = saved;
	return n;
}

static void (*stop_handler)(int);

static void on_stop(int sig)
{
	atomic_store(&stopping, 1);
	stop_handler(sig);
}

int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	static int (*real)(int, const struct sigaction *, struct sigaction *);
	struct sigaction mine;

	if (!real)
		*(void **)&real = real_fn("sigaction");
	if (sig != SIGTERM || !act || (act->sa_flags & SA_SIGINFO) ||
	    act->sa_handler == SIG_DFL || act->sa_handler == SIG_IGN)
		return real(sig, act, old);
	mine = *act;
	stop_handler = act->sa_handler;
	mine.sa_handler = on_stop;
	return real(sig, &mine, old);
}

int pthread_cancel(pthread_t thread)
{
	static int (*real)(pthread_t);

	if (!real)
		*(void **)&real = real_fn("pthread_cancel");
	atomic_store(&loop_ending, 1);
	return real(thread);
}

int pthread_setcancelstate(int state, int *oldstate)
{
	static int (*real)(int, int *);
	int r;

	if (!real)
		*(void **)&real = real_fn("pthread_setcancelstate");
	r = real(state, oldstate);
	if (state == PTHREAD_CANCEL_DISABLE && took_request) {
		int waited = 0;

		took_request = 0;
		while (!atomic_load(&loop_ending) &&
		       waited < (atomic_load(&stopping) ? STOP_MS : WINDOW_MS)) {
			usleep(1000);
			waited++;
		}
	}
	return r;
}
