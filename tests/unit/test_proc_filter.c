/* cache/index/proc_filter.c: the kernel drops, before the listener's socket,
 * what the listener would only throw away, and passes all it applies.
 *
 * No mount: two proc connector sockets subscribe as the daemon's listener
 * does (root, CAP_NET_ADMIN), one with the filter and one without, to every
 * event (the unfiltered listen request). The test then makes a thread that
 * exits, names itself (COMM), and forks a child that calls setsid (SID) and
 * exits. Both sockets are read until both exits arrived on each; the
 * unfiltered one shows that the kernel sent every event looked for. */
#include <assert.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/netlink.h>

#include "cache/index/proc_filter.h"
#include "cache/index/proc_msg.h"

#define WAIT_MS 10000

struct seen {
	int ack, thread_fork, thread_exit, child_fork, child_exit, child_sid, comm;
};

static pid_t thread_tid;

static int subscribe(int filtered)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK, .nl_groups = CN_IDX_PROC };
	char buf[PROC_MSG_REQUEST_SPACE] __attribute__((aligned(NLMSG_ALIGNTO)));
	uint32_t op = PROC_CN_MCAST_LISTEN;
	size_t len = proc_msg_request(buf, &op, sizeof(op), 7);
	int s = socket(PF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_CONNECTOR);

	assert(s >= 0);
	/* as the daemon's: room for what the machine sends meanwhile */
	assert(setsockopt(s, SOL_SOCKET, SO_RCVBUFFORCE, &(int){ 8 << 20 }, sizeof(int)) == 0);
	if (filtered)
		assert(proc_filter_attach(s) == 0);
	assert(bind(s, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	assert(send(s, buf, len, 0) == (ssize_t)len);
	return s;
}

/* As the daemon does: on kernels before 6.6 a listener never withdrawn is
 * counted until reboot. */
static void unsubscribe(int s)
{
	char buf[PROC_MSG_REQUEST_SPACE] __attribute__((aligned(NLMSG_ALIGNTO)));
	uint32_t op = PROC_CN_MCAST_IGNORE;
	size_t len = proc_msg_request(buf, &op, sizeof(op), 9);

	assert(send(s, buf, len, 0) == (ssize_t)len);
	close(s);
}

static void *short_thread(void *unused)
{
	(void)unused;
	thread_tid = (pid_t)syscall(SYS_gettid);
	return NULL;
}

static void note(struct seen *w, const struct proc_msg *m, pid_t self, pid_t child)
{
	if (m->what == PROC_EVENT_NONE && m->ack == 8)
		w->ack++;
	else if (m->what == PROC_EVENT_FORK && m->pid == thread_tid && m->tgid == self)
		w->thread_fork++;
	else if (m->what == PROC_EVENT_EXIT && m->pid == thread_tid && m->tgid == self)
		w->thread_exit++;
	else if (m->what == PROC_EVENT_FORK && m->pid == child && m->tgid == child)
		w->child_fork++;
	else if (m->what == PROC_EVENT_EXIT && m->pid == child)
		w->child_exit++;
	else if (m->what == PROC_EVENT_SID && m->pid == child)
		w->child_sid++;
	else if (m->what == PROC_EVENT_COMM && m->pid == self)
		w->comm++;
}

/* Reads s until both exits came (or WAIT_MS passed). */
static void read_until_exits(int s, struct seen *w, pid_t self, pid_t child)
{
	char buf[8192] __attribute__((aligned(NLMSG_ALIGNTO)));
	struct pollfd p = { .fd = s, .events = POLLIN };
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (!(w->thread_exit && w->child_exit)) {
		struct proc_msg m;
		ssize_t n;

		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) * 1000 > WAIT_MS || poll(&p, 1, 100) < 0)
			break;
		if (!(p.revents & POLLIN))
			continue;
		n = recv(s, buf, sizeof(buf), MSG_DONTWAIT);
		assert(n >= 0); /* ENOBUFS: the machine forked too much for the test */
		for (size_t off = 0; proc_msg_next(buf, (size_t)n, &off, &m);)
			note(w, &m, self, child);
	}
}

int main(void)
{
	int plain = subscribe(0), filtered = subscribe(1);
	struct seen on_plain = { 0 }, on_filtered = { 0 };
	pid_t self = getpid(), child;
	pthread_t t;

	assert(pthread_create(&t, NULL, short_thread, NULL) == 0);
	assert(pthread_join(t, NULL) == 0);
	assert(prctl(PR_SET_NAME, "proc-filter") == 0);
	child = fork();
	assert(child >= 0);
	if (child == 0) {
		setsid();
		_exit(0);
	}
	assert(waitpid(child, NULL, 0) == child);

	read_until_exits(plain, &on_plain, self, child);
	read_until_exits(filtered, &on_filtered, self, child);
	fprintf(stderr, "unfiltered: ack %d, thread fork %d exit %d, child fork %d exit %d sid %d, comm %d\n",
	       on_plain.ack, on_plain.thread_fork, on_plain.thread_exit, on_plain.child_fork,
	       on_plain.child_exit, on_plain.child_sid, on_plain.comm);
	fprintf(stderr, "filtered:   ack %d, thread fork %d exit %d, child fork %d exit %d sid %d, comm %d\n",
	       on_filtered.ack, on_filtered.thread_fork, on_filtered.thread_exit,
	       on_filtered.child_fork, on_filtered.child_exit, on_filtered.child_sid,
	       on_filtered.comm);
	/* the kernel sent them all */
	assert(on_plain.thread_fork == 1 && on_plain.thread_exit == 1);
	assert(on_plain.child_fork == 1 && on_plain.child_exit == 1);
	assert(on_plain.child_sid == 1 && on_plain.comm == 1 && on_plain.ack >= 1);
	/* what the listener applies passes; the rest does not */
	assert(on_filtered.ack >= 1); /* ours; the other socket's too when it came later */
	assert(on_filtered.thread_exit == 1 && on_filtered.child_fork == 1 &&
	       on_filtered.child_exit == 1);
	assert(on_filtered.thread_fork == 0 && on_filtered.child_sid == 0 && on_filtered.comm == 0);
	unsubscribe(plain);
	unsubscribe(filtered);
	return 0;
}
