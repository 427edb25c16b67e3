/* cache/index/proc_events.c's two stoppers at once. A stop signal makes the
 * drainer end the notifier (proc_events_stop_notices) while an unmount makes
 * the server's own stop end it too (proc_events_stop): a signal right after
 * an unmount (systemd, the benches' cleanup) runs both together. The
 * notifier must be joined once. Two joins waiting together left a daemon
 * behind, unmounted: the thread's exit wakes one joiner, which marks the
 * thread joined (glibc: tid -1), and the other waits forever.
 *
 * No mount: the listener subscribes to the kernel's process events as the
 * daemon does (root, CAP_NET_ADMIN). The notifier is kept busy in a cache
 * drop (a hook that sleeps) while both stoppers come, so that both wait for
 * it; the alarm fails a stop that hangs. */
#include <assert.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cache/index/proc_events.h"
#include "cache/index/tgid_index.h"

#define ROUNDS 5
#define HOOK_US 200000

static atomic_int in_hook;
static pthread_barrier_t both;

static int named(pid_t pid)
{
	(void)pid;
	return 1;
}

/* The notifier's cache drop for a leader's exit, slow as one that waits for
 * the kernel's directory lock. */
static void slow_drop(pid_t tgid)
{
	(void)tgid;
	atomic_store(&in_hook, 1);
	usleep(HOOK_US);
}

static void *signal_side(void *unused)
{
	(void)unused;
	pthread_barrier_wait(&both);
	proc_events_stop_notices();
	return NULL;
}

/* A process of the test's that exits: its exit event is queued for the
 * notifier, which then sits in slow_drop. */
static void notifier_busy(void)
{
	pid_t pid = fork();

	assert(pid >= 0);
	if (pid == 0)
		_exit(0);
	assert(waitpid(pid, NULL, 0) == pid);
	for (int ms = 0; !atomic_load(&in_hook); ms++) {
		assert(ms < 5000);
		usleep(1000);
	}
}

/* One daemon's life: its listener started, then stopped from both sides
 * (or, without a signal, by the server and then by nothing). */
static void one_server(int both_sides)
{
	struct proc_events_config cfg = { .fallback_ms = 100 };
	struct proc_event_hooks hooks = { .named = named, .leader_exited = slow_drop };
	int src = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	pthread_t drainer;

	assert(src >= 0);
	tgid_index_init(src);
	/* the listener's threads run only with events */
	assert(!strncmp(proc_events_start(&cfg, &hooks), "events", 6));
	assert(proc_events_run() == 0);
	notifier_busy();
	if (!both_sides) {
		proc_events_stop();
		proc_events_stop_notices(); /* the drainer's, after: nothing left */
		return;
	}
	assert(pthread_barrier_init(&both, NULL, 2) == 0);
	assert(pthread_create(&drainer, NULL, signal_side, NULL) == 0);
	pthread_barrier_wait(&both);
	proc_events_stop();
	assert(pthread_join(drainer, NULL) == 0);
}

/* Each in a process of its own, as each daemon is. */
static void run(int both_sides)
{
	int status;
	pid_t pid = fork();

	assert(pid >= 0);
	if (pid == 0) {
		alarm(10); /* a stop that hangs fails the test */
		one_server(both_sides);
		_exit(0);
	}
	assert(waitpid(pid, &status, 0) == pid);
	assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

int main(void)
{
	for (int i = 0; i < ROUNDS; i++)
		run(1);
	run(0);
	printf("%d stops from both sides, and one from the server's alone\n", ROUNDS);
	return 0;
}
