/* cache/index/proc_filter.c: the kernel drops, before each of the listener's
 * sockets, what the listener would only throw away there, and passes all it
 * applies there.
 *
 * No mount: four proc connector sockets subscribe as the daemon's listener
 * does (root, CAP_NET_ADMIN) to every event (the unfiltered listen request):
 * one without a filter and one with each side's. The test then makes a
 * thread that changes its saved uid (UID) and exits, names itself (COMM),
 * forks a child that calls setsid (SID), changes its saved uid and exits,
 * and ends with a second thread's exit, the last event every socket that
 * takes threads' events waits for (the others wait for the child's exit).
 * The unfiltered socket shows that the kernel sent every event looked for. */
#include <assert.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <stdlib.h>
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
	int ack, thread_fork, thread_uid, thread_exit, child_fork, child_uid, child_exit,
		child_sid, comm, last_exit;
};

static pid_t thread_tid, last_tid;

static int subscribe(int filtered, enum proc_filter_side side)
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
		assert(proc_filter_attach(s, side) == 0);
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

/* A raw setresuid, of this thread alone, changing only the saved uid: one
 * UID event, and nothing this process needs changes. */
static void change_saved_uid(uid_t to)
{
	assert(syscall(SYS_setresuid, -1, -1, to) == 0);
}

static void *uid_thread(void *unused)
{
	(void)unused;
	thread_tid = (pid_t)syscall(SYS_gettid);
	change_saved_uid(1);
	return NULL;
}

static void *last_thread(void *unused)
{
	(void)unused;
	last_tid = (pid_t)syscall(SYS_gettid);
	return NULL;
}

static void note(struct seen *w, const struct proc_msg *m, pid_t self, pid_t child)
{
	if (m->what == PROC_EVENT_NONE && m->ack == 8)
		w->ack++;
	else if (m->what == PROC_EVENT_FORK && m->pid == thread_tid && m->tgid == self)
		w->thread_fork++;
	else if (m->what == PROC_EVENT_UID && m->pid == thread_tid && m->tgid == self)
		w->thread_uid++;
	else if (m->what == PROC_EVENT_EXIT && m->pid == thread_tid && m->tgid == self)
		w->thread_exit++;
	else if (m->what == PROC_EVENT_EXIT && m->pid == last_tid && m->tgid == self)
		w->last_exit++;
	else if (m->what == PROC_EVENT_FORK && m->pid == child && m->tgid == child)
		w->child_fork++;
	else if (m->what == PROC_EVENT_UID && m->pid == child)
		w->child_uid++;
	else if (m->what == PROC_EVENT_EXIT && m->pid == child)
		w->child_exit++;
	else if (m->what == PROC_EVENT_SID && m->pid == child)
		w->child_sid++;
	else if (m->what == PROC_EVENT_COMM && m->pid == self)
		w->comm++;
}

/* Reads s until its last event came (the last thread's exit, or the child's
 * where the socket takes no thread's events), or WAIT_MS passed. */
static void read_until_last(int s, struct seen *w, int threads_pass, pid_t self, pid_t child)
{
	char buf[8192] __attribute__((aligned(NLMSG_ALIGNTO)));
	struct pollfd p = { .fd = s, .events = POLLIN };
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (!(threads_pass ? w->last_exit : w->child_exit)) {
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

static void show(const char *name, const struct seen *w)
{
	fprintf(stderr,
		"%-10s ack %d; thread fork %d uid %d exit %d; child fork %d uid %d exit %d "
		"sid %d; comm %d; last thread exit %d\n",
		name, w->ack, w->thread_fork, w->thread_uid, w->thread_exit, w->child_fork,
		w->child_uid, w->child_exit, w->child_sid, w->comm, w->last_exit);
}

static void run_thread(void *(*fn)(void *))
{
	pthread_t t;

	assert(pthread_create(&t, NULL, fn, NULL) == 0);
	assert(pthread_join(t, NULL) == 0);
}

int main(void)
{
	int plain = subscribe(0, PROC_FILTER_ALL), all = subscribe(1, PROC_FILTER_ALL);
	int procs = subscribe(1, PROC_FILTER_PROCESSES), threads = subscribe(1, PROC_FILTER_THREADS);
	struct seen on_plain = { 0 }, on_all = { 0 }, on_procs = { 0 }, on_threads = { 0 };
	pid_t self = getpid(), child;

	run_thread(uid_thread);
	assert(prctl(PR_SET_NAME, "proc-filter") == 0);
	child = fork();
	assert(child >= 0);
	if (child == 0) {
		setsid();
		change_saved_uid(1);
		_exit(0);
	}
	assert(waitpid(child, NULL, 0) == child);
	run_thread(last_thread);

	read_until_last(plain, &on_plain, 1, self, child);
	read_until_last(all, &on_all, 1, self, child);
	read_until_last(procs, &on_procs, 0, self, child);
	read_until_last(threads, &on_threads, 1, self, child);
	show("unfiltered", &on_plain);
	show("all", &on_all);
	show("processes", &on_procs);
	show("threads", &on_threads);
	/* the kernel sent them all */
	assert(on_plain.thread_fork == 1 && on_plain.thread_uid == 1 && on_plain.thread_exit == 1);
	assert(on_plain.child_fork == 1 && on_plain.child_uid == 1 && on_plain.child_exit == 1);
	assert(on_plain.child_sid == 1 && on_plain.comm == 1 && on_plain.ack >= 1);
	assert(on_plain.last_exit == 1);
	/* what the listener applies passes on each socket of a side; the rest
	 * does not. Each has its own answer; another socket's came too when it
	 * came later. */
	assert(on_all.ack >= 1 && on_procs.ack >= 1 && on_threads.ack >= 1);
	assert(on_all.thread_uid == 1 && on_all.thread_exit == 1 && on_all.last_exit == 1);
	assert(on_all.child_fork == 1 && on_all.child_uid == 1 && on_all.child_exit == 1);
	assert(on_all.thread_fork == 0 && on_all.child_sid == 0 && on_all.comm == 0);
	assert(on_procs.child_fork == 1 && on_procs.child_uid == 1 && on_procs.child_exit == 1);
	assert(on_procs.thread_fork == 0 && on_procs.thread_uid == 0 && on_procs.thread_exit == 0);
	assert(on_procs.child_sid == 0 && on_procs.comm == 0);
	assert(on_threads.thread_uid == 1 && on_threads.thread_exit == 1 && on_threads.last_exit == 1);
	assert(on_threads.thread_fork == 0 && on_threads.child_fork == 0);
	assert(on_threads.child_uid == 0 && on_threads.child_exit == 0);
	assert(on_threads.child_sid == 0 && on_threads.comm == 0);
	unsubscribe(plain);
	unsubscribe(all);
	unsubscribe(procs);
	unsubscribe(threads);
	return 0;
}
