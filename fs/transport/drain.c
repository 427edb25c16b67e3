#include "fs/transport/drain.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fs/lib/log.h"
#include "fs/lib/wake_signal.h"

#define MAX_READERS 512
#define DRAIN_WAIT_MS 5000

static struct fuse_session *session;
static void (*quiesce_fn)(void);
static atomic_int draining;
static atomic_int no_waits;
static atomic_int waiting;
/* The threads inside a read of /dev/fuse, by tid: the ones to interrupt. */
static atomic_int readers[MAX_READERS];
static _Thread_local int my_slot = -1;
static int stop_pipe[2] = { -1, -1 };
static pthread_t drainer_thread;
static int drainer_started;
/* The server's loop has ended (drain_stop): nothing is left to drain. */
static atomic_int loop_over;
/* Threads that read a request and have neither read again nor ended: the
 * session ends only once there are none, because libfuse's loop drops a
 * request read as it ends (fuse_loop_mt.c: a worker that finds the loop's
 * exit flag set after its read returns leaves without processing what it
 * read, and the close of its clone fd then ends that request with
 * ECONNABORTED). The key's destructor counts a thread that ends holding one. */
static atomic_int taken;
static pthread_key_t taken_key;
static int taken_key_made; /* set once by drain_init, before any worker reads */

static int enter(void)
{
	int tid = (int)syscall(SYS_gettid);

	for (int i = 0; i < MAX_READERS; i++) {
		int free_slot = 0;

		if (atomic_compare_exchange_strong(&readers[i], &free_slot, tid))
			return i;
	}
	return -1; /* more readers than slots: the drain waits for it all the same */
}

int drain_read_begin(void)
{
	my_slot = enter();
	/* registered before looking: the drainer sees either the flag set
	 * here or this thread in its table */
	if (atomic_load(&draining)) {
		drain_read_end();
		errno = EINTR;
		return -1;
	}
	return 0;
}

int drain_stopping(void)
{
	return atomic_load(&draining);
}

void drain_read_end(void)
{
	if (my_slot >= 0)
		atomic_store(&readers[my_slot], 0);
	my_slot = -1;
}

static void taken_thread_ended(void *held)
{
	(void)held;
	atomic_fetch_sub(&taken, 1);
}

static void make_taken_key(void)
{
	if (pthread_key_create(&taken_key, taken_thread_ended))
		log_warn("drain: no thread key: a request read as the server stops may be lost");
	else
		taken_key_made = 1;
}

void drain_taken_begin(void)
{
	if (!taken_key_made)
		return;
	atomic_fetch_add(&taken, 1);
	if (pthread_setspecific(taken_key, &taken))
		atomic_fetch_sub(&taken, 1);
}

void drain_taken_end(void)
{
	if (taken_key_made && pthread_getspecific(taken_key)) {
		pthread_setspecific(taken_key, NULL);
		atomic_fetch_sub(&taken, 1);
	}
}

int drain_wait_begin(void)
{
	atomic_fetch_add(&waiting, 1);
	if (atomic_load(&no_waits)) {
		atomic_fetch_sub(&waiting, 1);
		return 0;
	}
	return 1;
}

void drain_wait_end(void)
{
	atomic_fetch_sub(&waiting, 1);
}

static int readers_left(int wake);

/* Each step bounded: a stop must come even if something never ends. Once
 * the loop is over, nothing is left to wait for: 0. */
static int wait_until_zero(atomic_int *count, int wake)
{
	for (int ms = 0; ms < DRAIN_WAIT_MS && !atomic_load(&loop_over); ms++) {
		if (!(wake ? readers_left(1) : atomic_load(count)))
			return 0;
		usleep(1000);
	}
	return atomic_load(&loop_over) ? 0 : (wake ? readers_left(0) : atomic_load(count));
}

static int readers_left(int wake)
{
	int left = 0;

	for (int i = 0; i < MAX_READERS; i++) {
		int tid = atomic_load(&readers[i]);

		if (tid) {
			left++;
			if (wake)
				syscall(SYS_tgkill, getpid(), tid, WAKE_SIGNAL);
		}
	}
	return left;
}

static void *drainer(void *arg)
{
	char sig = 0;
	int left;

	(void)arg;
	while (read(stop_pipe[0], &sig, 1) < 0 && errno == EINTR)
		;
	if (!sig || atomic_load(&loop_over)) /* drain_stop: the loop ended already */
		return NULL;
	if (quiesce_fn)
		quiesce_fn();
	atomic_store(&no_waits, 1);
	if ((left = wait_until_zero(&waiting, 0)))
		log_warn("stopping with %d requests waiting for the kernel's locks", left);
	atomic_store(&draining, 1);
	if ((left = wait_until_zero(NULL, 1)))
		log_warn("stopping with %d reads of the connection still under way", left);
	/* no read starts now: those that took a request are counted by now */
	if ((left = wait_until_zero(&taken, 0)))
		log_warn("stopping with %d requests read and not yet done", left);
	fuse_session_exit(session);
	return NULL;
}

static void on_stop(int sig)
{
	char c = (char)sig;
	int saved = errno;

	if (write(stop_pipe[1], &c, 1) < 0) {
		/* a second signal while the first is handled: nothing to add */
	}
	errno = saved;
}

static void on_wake(int sig)
{
	(void)sig; /* only interrupts a read: no SA_RESTART */
}

static int handle(int sig, void (*fn)(int))
{
	struct sigaction sa = { .sa_handler = fn };

	sigemptyset(&sa.sa_mask);
	return sigaction(sig, &sa, NULL) ? -errno : 0;
}

int drain_init(struct fuse_session *se, void (*quiesce)(void))
{
	int r;

	session = se;
	quiesce_fn = quiesce;
	if (!taken_key_made)
		make_taken_key();
	if (pipe2(stop_pipe, O_CLOEXEC | O_NONBLOCK) ||
	    fcntl(stop_pipe[0], F_SETFL, 0)) /* the drainer blocks, the handler does not */
		return -errno;
	if ((r = pthread_create(&drainer_thread, NULL, drainer, NULL)))
		return -r;
	drainer_started = 1;
	if ((r = handle(WAKE_SIGNAL, on_wake)) || (r = handle(SIGTERM, on_stop)) ||
	    (r = handle(SIGINT, on_stop)) || (r = handle(SIGHUP, on_stop)))
		return r;
	return 0;
}

/* An unmount ends the loop without a signal, and a signal may come while the
 * server stops: the drainer, which ends the session, must be done before the
 * session is destroyed. With the loop over, a drain under way has nothing
 * left to wait for (its waits would hold the stop for seconds). */
void drain_stop(void)
{
	char end = 0;

	if (!drainer_started)
		return;
	atomic_store(&loop_over, 1);
	if (write(stop_pipe[1], &end, 1) < 0) {
		/* full: a signal's byte is there, and the drainer ends after it */
	}
	pthread_join(drainer_thread, NULL);
	drainer_started = 0;
}
