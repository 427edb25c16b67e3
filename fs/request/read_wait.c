/* Reads that wait, ended by the reader's interrupt (read_wait.h).
 *
 * No wake-up is lost: the worker blocks WAKE_SIGNAL, registers the
 * interrupt function (libfuse calls it at once for a request interrupted
 * already), looks at the request, and only then waits, in ppoll with the
 * signal unblocked: a signal sent in between stays pending until ppoll
 * takes it. The read itself does not wait (O_NONBLOCK), except where
 * another reader of the source took what the wait saw (procfs's own
 * O_NONBLOCK read waits then); the signal is unblocked around it too. */
#include "fs/request/read_wait.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fs/lib/wake_signal.h"

static const struct read_wait_stop *stop;

void read_wait_set_stop(const struct read_wait_stop *s)
{
	stop = s;
}

static int ended(fuse_req_t req)
{
	return fuse_req_interrupted(req) || (stop && stop->stopping());
}

static void wake(fuse_req_t req, void *data)
{
	(void)req;
	syscall(SYS_tgkill, getpid(), *(pid_t *)data, WAKE_SIGNAL);
}

static ssize_t read_once(int fd, char *buf, size_t size)
{
	ssize_t got = read(fd, buf, size);

	return got < 0 ? -errno : got;
}

/* One read: bytes, or -errno (EAGAIN: nothing yet, EINTR: woken). */
static ssize_t read_unblocked(fuse_req_t req, int fd, char *buf, size_t size,
			      const sigset_t *waking)
{
	sigset_t blocked;
	ssize_t got = -EINTR;

	pthread_sigmask(SIG_SETMASK, waking, &blocked);
	if (!ended(req))
		got = read_once(fd, buf, size);
	pthread_sigmask(SIG_SETMASK, &blocked, NULL);
	return got;
}

ssize_t read_wait(fuse_req_t req, int fd, char *buf, size_t size, int nonblock)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	pid_t self = (pid_t)syscall(SYS_gettid);
	sigset_t wake_only, before, waking;
	ssize_t got;

	if (nonblock)
		return read_once(fd, buf, size);
	sigemptyset(&wake_only);
	sigaddset(&wake_only, WAKE_SIGNAL);
	pthread_sigmask(SIG_BLOCK, &wake_only, &before);
	waking = before; /* the mask while waiting: a ring thread blocks every other */
	sigdelset(&waking, WAKE_SIGNAL);
	if (stop && stop->enter()) {
		pthread_sigmask(SIG_SETMASK, &before, NULL);
		return -EINTR;
	}
	fuse_req_interrupt_func(req, wake, &self);
	for (got = -EAGAIN; got == -EAGAIN || got == -EINTR;) {
		if (ended(req))
			break;
		if (ppoll(&p, 1, NULL, &waking) < 0)
			got = -errno;
		else
			got = read_unblocked(req, fd, buf, size, &waking);
	}
	/* no wake after this: libfuse calls the function under the request's
	 * lock, which this takes */
	fuse_req_interrupt_func(req, NULL, NULL);
	if (stop)
		stop->leave();
	if (got == -EAGAIN)
		got = -EINTR;
	/* a wake sent before lands in its handler, or stays pending in a ring
	 * thread, where it ends nothing but a later ppoll's wait, looked at again */
	pthread_sigmask(SIG_SETMASK, &before, NULL);
	return got;
}
