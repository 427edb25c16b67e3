/* FUSE over io_uring: the ring threads (uring.h). */
#include "fs/transport/uring.h"

#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fs/lib/cleanup.h"
#include "fs/lib/cpulist.h"
#include "fs/lib/log.h"
#include "fs/transport/uring_slots.h"

/* The user data of the completion that tells a ring thread to stop; an
 * entry's commands carry the entry's address. */
#define STOP_DATA 1
/* How long a stopping thread waits for its entry to be handed a request
 * (park), and the server for its threads to take the stop (uring_stop). */
#define PARK_WAIT_MS 1000
#define STOPPING_WAIT_MS 200
/* A request as libfuse reads it: header, fixed argument, then the payload. */
#define REQUEST_MAX (sizeof(struct fuse_in_header) + FUSE_URING_OP_IN_OUT_SZ + URING_PAYLOAD)
/* The rings' setup: not SQPOLL, so that a ring thread submits its commits
 * itself, in the call that waits (wait_for_requests). */
#define RING_FLAGS IORING_SETUP_SQE128
_Static_assert(!(RING_FLAGS & IORING_SETUP_SQPOLL), "wait_for_requests submits for the ring");

/* Linux 6.15: a wait for completions that the scheduler does not count as
 * iowait (include/uapi/linux/io_uring.h); liburing 2.3 knows neither. */
#ifndef IORING_ENTER_NO_IOWAIT
#define IORING_ENTER_NO_IOWAIT (1U << 7)
#endif
#ifndef IORING_FEAT_NO_IOWAIT
#define IORING_FEAT_NO_IOWAIT (1U << 17)
#endif

struct ring_entry {
	struct uring_slot *slot;
	struct iovec iov[2]; /* the slot's buffers, read by the kernel at REGISTER */
	uint64_t commit_id;  /* the request being served */
	int replied;
};

struct ring_thread {
	pthread_t thread;
	unsigned qid;
	struct io_uring ring;
	struct ring_entry ent[URING_ENTRIES_PER_THREAD];
	char *request;       /* the request being served, copied out of its slot */
	int started;         /* 1 registered, -errno failed, 0 not yet */
	atomic_int looping;  /* until its loop ends; its ring stays open until joined */
};

static struct fuse_session *session;
static int dev_fd = -1;
static atomic_int idle_is_iowait; /* set by the ring threads before they report */
static struct ring_thread *threads;
static unsigned nthreads;
static pthread_mutex_t start_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t start_cond = PTHREAD_COND_INITIALIZER;
static __thread struct ring_entry *serving;
static __thread struct ring_thread *self;
static atomic_uint *waiting; /* per queue: its threads waiting for the kernel */
static atomic_uint *unparked; /* per queue: entries of stopping threads yet to park */
static atomic_uint stopping;  /* threads that took the stop */
static const char *kick_path; /* where the mount is reached (kick) */

unsigned uring_queue_count(void)
{
	char line[256] = "";
	cpu_set_t set;
	FILE *f = fopen("/sys/devices/system/cpu/possible", "re");
	int last = -1;

	if (f) {
		if (!fgets(line, sizeof(line), f))
			line[0] = 0;
		fclose(f);
	}
	line[strcspn(line, "\n")] = 0;
	if (cpulist_parse(line, &set))
		return (unsigned)sysconf(_SC_NPROCESSORS_CONF);
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &set))
			last = c;
	return (unsigned)last + 1;
}

static void pin(unsigned cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	/* An offline CPU, or one outside our cpuset: its queue is served from
	 * wherever the thread runs. */
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

static void prep_cmd(struct ring_thread *t, struct ring_entry *e, unsigned cmd, uint64_t commit_id)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&t->ring);
	struct fuse_uring_cmd_req *req;

	/* A command in flight an entry, and the ring has room for all. */
	if (!sqe)
		return;
	memset(sqe, 0, 2 * sizeof(*sqe)); /* SQE128: the command is the second half */
	sqe->opcode = IORING_OP_URING_CMD;
	/* Not a registered file: the ring would keep /dev/fuse open after the
	 * server's death, and the connection of a mount without supervisor would
	 * outlive it. */
	sqe->fd = dev_fd;
	sqe->cmd_op = cmd;
	if (cmd == FUSE_IO_URING_CMD_REGISTER) {
		sqe->addr = (uintptr_t)e->iov;
		sqe->len = 2;
	}
	req = (struct fuse_uring_cmd_req *)sqe->cmd;
	req->qid = (uint16_t)t->qid;
	req->commit_id = commit_id;
	io_uring_sqe_set_data(sqe, e);
}

/* The reply is written: the kernel reads it at the commit, and the slot no
 * longer holds a request of its own (uring_slot_left). */
static void answer_error(struct ring_entry *e, uint64_t unique, int err)
{
	struct fuse_out_header *out = (struct fuse_out_header *)e->slot->hdr.in_out;

	*out = (struct fuse_out_header){ .len = sizeof(*out), .error = err, .unique = unique };
	e->slot->hdr.ring_ent_in_out.payload_sz = 0;
	e->slot->hdr.ring_ent_in_out.commit_id = 0;
	e->replied = 1;
}

int uring_owns_reply(unsigned long long unique)
{
	return serving && serving->commit_id == unique;
}

int uring_thread_queue(void)
{
	return self ? (int)self->qid : -1;
}

ssize_t uring_reply(const struct iovec *iov, int count)
{
	struct ring_entry *e = serving;
	struct fuse_uring_req_header *hdr = &e->slot->hdr;
	size_t n = 0;

	if (count < 1 || iov[0].iov_len != sizeof(struct fuse_out_header)) {
		errno = EINVAL;
		return -1;
	}
	memcpy(hdr->in_out, iov[0].iov_base, iov[0].iov_len);
	for (int i = 1; i < count; i++) {
		if (iov[i].iov_len > URING_PAYLOAD - n) {
			log_err("a reply of more than %d bytes", URING_PAYLOAD);
			answer_error(e, e->commit_id, -EIO);
			return (ssize_t)(iov[0].iov_len + n);
		}
		memcpy(e->slot->payload + n, iov[i].iov_base, iov[i].iov_len);
		n += iov[i].iov_len;
	}
	hdr->ring_ent_in_out.payload_sz = (uint32_t)n;
	hdr->ring_ent_in_out.commit_id = 0;
	e->replied = 1;
	return (ssize_t)(iov[0].iov_len + n);
}

/* The request as libfuse reads it from /dev/fuse, from what the kernel put in
 * the slot: 0 when that is not a request (a dead server's leftovers too). */
static size_t copy_request(char *to, const struct uring_slot *s)
{
	struct fuse_in_header in;
	size_t payload = s->hdr.ring_ent_in_out.payload_sz, arg;

	memcpy(&in, s->hdr.in_out, sizeof(in));
	if (in.len < sizeof(in) + payload || payload > URING_PAYLOAD)
		return 0;
	arg = in.len - sizeof(in) - payload;
	if (arg > FUSE_URING_OP_IN_OUT_SZ)
		return 0;
	memcpy(to, &in, sizeof(in));
	memcpy(to + sizeof(in), s->hdr.op_in, arg);
	memcpy(to + sizeof(in) + arg, s->payload, payload);
	return in.len;
}

/* Serves the request the kernel put in e's slot, and readies its commit. The
 * request is copied out first: the reply is written over it. */
static void serve(struct ring_thread *t, struct ring_entry *e)
{
	struct uring_slot *s = e->slot;
	uint64_t id = s->hdr.ring_ent_in_out.commit_id;
	size_t len = copy_request(t->request, s);

	atomic_store(&s->taken, id);
	e->commit_id = id;
	e->replied = 0;
	if (len) {
		struct fuse_buf buf = { .mem = t->request, .size = len };

		serving = e;
		fuse_session_process_buf(session, &buf);
		serving = NULL;
	}
	if (!e->replied) /* nothing libfuse answers without a reply comes here */
		answer_error(e, id, len ? -EIO : -EINVAL);
	prep_cmd(t, e, FUSE_IO_URING_CMD_COMMIT_AND_FETCH, id);
}

/* Readies e's first command for what its slot holds. A dead server's taken
 * request ends as over /dev/fuse, where its clone fd's release ends it: with
 * ECONNABORTED; a server that crashed on it would crash again. */
static void prep_first(struct ring_thread *t, struct ring_entry *e)
{
	uint64_t id;

	switch (uring_slot_left(e->slot, &id)) {
	case SLOT_POSTED:
		serve(t, e);
		return;
	case SLOT_TAKEN:
		log_warn("ending request %llu, taken by a server that died", (unsigned long long)id);
		answer_error(e, id, -ECONNABORTED);
		/* fallthrough */
	case SLOT_ANSWERED:
		prep_cmd(t, e, FUSE_IO_URING_CMD_COMMIT_AND_FETCH, id);
		return;
	case SLOT_EMPTY:
		prep_cmd(t, e, FUSE_IO_URING_CMD_REGISTER, 0);
		return;
	}
}

/* A ring thread that cannot go on leaves its queue without its entries, and
 * a queue without entries holds its requests for ever: the server ends, and
 * the supervisor starts another. */
static _Noreturn void ring_failed(struct ring_thread *t, int err)
{
	log_err("io_uring queue %u: %s: ending the server", t->qid, strerror(-err));
	_exit(1);
}

enum step { STEP_ON, STEP_STOP, STEP_GONE };

/* One completion: a request for an entry, the stop, or an entry's end; a
 * step, or -errno. A commit of a request the kernel no longer has (a dead
 * server committed it) fails with ENOENT: the slot is registered afresh. */
static int complete(struct ring_thread *t, struct io_uring_cqe *cqe, unsigned *live)
{
	uint64_t data = cqe->user_data;
	struct ring_entry *e = (struct ring_entry *)(uintptr_t)data;
	int res = cqe->res;

	io_uring_cqe_seen(&t->ring, cqe);
	if (data == STOP_DATA)
		return STEP_STOP;
	if (res == -ENOENT) {
		atomic_store(&e->slot->taken, 0);
		prep_cmd(t, e, FUSE_IO_URING_CMD_REGISTER, 0);
		return STEP_ON;
	}
	/* ENOTCONN: unmounted, the kernel hands the entries back */
	if (res == -ENOTCONN || res == -ECONNABORTED)
		return --*live ? STEP_ON : STEP_GONE;
	if (res < 0)
		return res;
	serve(t, e);
	return STEP_ON;
}

/* Registers the entries (or takes back what a dead server left in them).
 * A command's failure comes back at once; its success only with a request. */
static int submit_first(struct ring_thread *t)
{
	struct io_uring_cqe *cqe;
	unsigned live = URING_ENTRIES_PER_THREAD;
	int r;

	for (int i = 0; i < URING_ENTRIES_PER_THREAD; i++)
		prep_first(t, &t->ent[i]);
	do {
		if ((r = io_uring_submit(&t->ring)) < 0)
			return r;
		r = 0;
		if (!io_uring_peek_cqe(&t->ring, &cqe) && cqe->res < 0 && cqe->user_data != STOP_DATA)
			r = complete(t, cqe, &live);
	} while (r == STEP_ON && io_uring_sq_ready(&t->ring));
	return r < 0 ? r : live ? 0 : -ENOTCONN;
}

static int ring_setup(struct ring_thread *t)
{
	sigset_t set;

	/* Signals go to libfuse's threads. */
	sigfillset(&set);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	pin(t->qid);
	t->request = malloc(REQUEST_MAX);
	if (!t->request)
		return -ENOMEM;
	return io_uring_queue_init(2 * URING_ENTRIES_PER_THREAD, &t->ring, RING_FLAGS);
}

/* io_uring_submit_and_wait(ring, 1), except that the wait is not counted as
 * iowait where the kernel offers that. The kernel counts a task that waits
 * in io_uring_enter with commands of its own in flight as waiting for I/O
 * (io_uring.c, current_pending_io): each idle ring thread, whose entry waits
 * for a request for as long as the mount is idle, would add one to
 * procs_blocked and its CPU's idle time would show as iowait. liburing 2.3
 * passes no flags of ours, so the submission is liburing's own
 * (queue.c, __io_uring_flush_sq): the SQEs got since the last call are
 * published in the ring's tail, and the call submits what the kernel has not
 * taken yet. No SQPOLL (RING_FLAGS): nobody else takes them. */
static int wait_for_requests(struct io_uring *ring)
{
	struct io_uring_sq *sq = &ring->sq;
	unsigned tail = sq->sqe_tail;

	if (!(ring->features & IORING_FEAT_NO_IOWAIT))
		return io_uring_submit_and_wait(ring, 1);
	if (sq->sqe_head != tail) {
		sq->sqe_head = tail;
		io_uring_smp_store_release(sq->ktail, tail);
	}
	return io_uring_enter((unsigned)ring->ring_fd, tail - IO_URING_READ_ONCE(*sq->khead), 1,
			      IORING_ENTER_GETEVENTS | IORING_ENTER_NO_IOWAIT, NULL);
}

static void report_start(struct ring_thread *t, int r)
{
	pthread_mutex_lock(&start_lock);
	t->started = r ? r : 1;
	pthread_cond_broadcast(&start_cond);
	pthread_mutex_unlock(&start_lock);
}

/* One completion while parking: 1 when it ends the wait (the entry holds
 * a request, or is gone). A request is left in the slot, not taken, for the
 * next server (uring_slots.h). */
static int parked_by(struct ring_thread *t, struct io_uring_cqe *cqe)
{
	uint64_t data = cqe->user_data;

	io_uring_cqe_seen(&t->ring, cqe);
	return data != STOP_DATA;
}

/* After a stop: the commits of what the thread served go in, and its entry
 * waits again. The kernel may hand a request to a waiting entry until the
 * ring is closed, and one it hands once the thread is gone ends ECANCELED for
 * its caller (dev_uring.c, fuse_uring_send_in_task). So the thread stays
 * until its entry holds a request, which it leaves to the next server: the
 * next request the kernel hands it, or else a kick's (uring_stop). Past
 * PARK_WAIT_MS (a kick that cannot reach the queue's CPU) it goes all the
 * same. */
static void park(struct ring_thread *t, unsigned live)
{
	struct __kernel_timespec step = { .tv_nsec = 10 * 1000 * 1000 };
	struct io_uring_cqe *cqe;
	int waited_ms = 0;

	atomic_fetch_add(&unparked[t->qid], live);
	atomic_fetch_add(&stopping, 1);
	while (live && waited_ms < PARK_WAIT_MS) {
		int r = io_uring_submit_and_wait_timeout(&t->ring, &cqe, 1, &step, NULL);

		if (r == -ETIME)
			waited_ms += 10;
		else if (r < 0 && r != -EINTR)
			break;
		while (live && !io_uring_peek_cqe(&t->ring, &cqe))
			if (parked_by(t, cqe)) {
				live--;
				atomic_fetch_sub(&unparked[t->qid], 1);
			}
	}
	atomic_fetch_sub(&unparked[t->qid], live);
	/* the commits went in: the next server has nothing to commit again */
	for (int i = 0; i < URING_ENTRIES_PER_THREAD; i++)
		atomic_store(&t->ent[i].slot->taken, 0);
}

static void serve_ring(struct ring_thread *t)
{
	unsigned live = URING_ENTRIES_PER_THREAD;

	for (;;) {
		struct io_uring_cqe *cqe;
		int r = wait_for_requests(&t->ring);

		if (r < 0 && r != -EINTR)
			ring_failed(t, r);
		/* none after a stop signal (SIGSTOP, a debugger) */
		while (!io_uring_peek_cqe(&t->ring, &cqe)) {
			if ((r = complete(t, cqe, &live)) < 0)
				ring_failed(t, r);
			if (r == STEP_STOP)
				return park(t, live);
			if (r == STEP_GONE)
				return;
		}
	}
}

static void *ring_main(void *arg)
{
	struct ring_thread *t = arg;
	int r = ring_setup(t);

	self = t;
	if (!r && (r = submit_first(t)) < 0)
		io_uring_queue_exit(&t->ring);
	if (!r && !(t->ring.features & IORING_FEAT_NO_IOWAIT))
		atomic_store(&idle_is_iowait, 1); /* read once they reported (uring_start) */
	atomic_store(&t->looping, !r);
	report_start(t, r);
	if (!r)
		serve_ring(t);
	atomic_store(&t->looping, 0);
	free(t->request);
	t->request = NULL;
	return NULL;
}

/* Requests made while no server ran wait on their queue, and the kernel
 * hands them out only as an entry of that queue commits: a GETATTR of the
 * root made from each CPU starts that. Not a lookup: a request that waits
 * may hold the root's lock, which a lookup would wait for. Made by processes
 * of their own, not threads of the server: a thread waiting for an answer
 * of its own mount (uninterruptibly, once its request was handed to a ring)
 * would keep a server that dies first from being reaped, and the supervisor
 * starts the next server, the one that would end that request, only then.
 * A kicker keeps no fd of the server's: one of /dev/fuse would keep the
 * connection from ending. */
static _Noreturn void kick(unsigned qid, const char *mountpoint)
{
	struct statx stx;

	prctl(PR_SET_NAME, "procfast-kick");
	pin(qid);
	statx(AT_FDCWD, mountpoint, AT_STATX_FORCE_SYNC, STATX_MODE, &stx);
	_exit(0);
}

/* A child forks kicks[q] kickers for each queue q and exits at once: nothing
 * is left for the server to reap, and a kicker that waits long keeps nobody
 * waiting. */
static void kick_queues(const unsigned *kicks)
{
	unsigned nq = uring_slots_queues();
	pid_t pid = fork();

	if (pid < 0) {
		log_warn("cannot wake the io_uring queues: %s", strerror(errno));
		return;
	}
	if (pid == 0) {
		close_range(3, ~0U, 0);
		for (unsigned q = 0; q < nq; q++)
			for (unsigned i = 0; i < kicks[q]; i++)
				if (fork() == 0)
					kick(q, kick_path);
		_exit(0);
	}
	waitpid(pid, NULL, 0);
}

static unsigned wait_started(void)
{
	unsigned ok = 0;

	pthread_mutex_lock(&start_lock);
	for (unsigned i = 0; i < nthreads; i++) {
		while (!threads[i].started)
			pthread_cond_wait(&start_cond, &start_lock);
		ok += threads[i].started > 0;
	}
	pthread_mutex_unlock(&start_lock);
	return ok;
}

static void free_threads(void)
{
	free(threads);
	free(waiting);
	free(unparked);
	threads = NULL;
	waiting = NULL;
	unparked = NULL;
	nthreads = 0;
}

int uring_start(struct fuse_session *se, unsigned per_queue, const char *mountpoint, int resumed)
{
	unsigned nq = uring_queue_count(), ok;
	int r;

	if ((r = uring_slots_reserve(nq, per_queue * URING_ENTRIES_PER_THREAD)))
		return r;
	if (uring_slots_queues() != nq ||
	    uring_slots_per_queue() != per_queue * URING_ENTRIES_PER_THREAD)
		return -EINVAL;
	session = se;
	dev_fd = fuse_session_fd(se);
	kick_path = mountpoint;
	atomic_store(&stopping, 0);
	threads = calloc((size_t)nq * per_queue, sizeof(*threads));
	waiting = calloc(nq, sizeof(*waiting));
	unparked = calloc(nq, sizeof(*unparked));
	if (!threads || !waiting || !unparked) {
		free_threads();
		return -ENOMEM;
	}
	for (unsigned q = 0; q < nq; q++)
		for (unsigned i = 0; i < per_queue; i++) {
			struct ring_thread *t = &threads[nthreads];

			t->qid = q;
			for (unsigned k = 0; k < URING_ENTRIES_PER_THREAD; k++) {
				struct ring_entry *e = &t->ent[k];

				e->slot = uring_slot_at(q, i * URING_ENTRIES_PER_THREAD + k);
				e->iov[0] = (struct iovec){ &e->slot->hdr, sizeof(e->slot->hdr) };
				e->iov[1] = (struct iovec){ e->slot->payload, URING_PAYLOAD };
			}
			if ((r = pthread_create(&t->thread, NULL, ring_main, t)))
				break;
			nthreads++;
		}
	ok = wait_started();
	for (unsigned i = 0; i < nthreads; i++)
		if (threads[i].started < 0)
			r = threads[i].started;
	if (ok && ok < nthreads) /* none: the caller says why */
		log_warn("io_uring: %u of %u threads registered: %s", ok, nthreads, strerror(-r));
	if (ok && resumed && mountpoint) {
		unsigned one[nq];

		for (unsigned q = 0; q < nq; q++)
			one[q] = 1;
		kick_queues(one);
	}
	return ok ? 0 : r ? r : -EIO;
}

int uring_idle_is_iowait(void)
{
	return atomic_load(&idle_is_iowait);
}

int uring_begin_wait(void)
{
	if (!self)
		return 1;
	if (atomic_fetch_add(&waiting[self->qid], 1) + 1 <
	    uring_slots_per_queue() / URING_ENTRIES_PER_THREAD)
		return 1;
	atomic_fetch_sub(&waiting[self->qid], 1);
	return 0;
}

void uring_end_wait(void)
{
	if (self)
		atomic_fetch_sub(&waiting[self->qid], 1);
}

/* A message on each ring still served ends its thread's wait: the threads
 * block every signal, and a signal could come between two waits. Returns
 * how many were told. */
static unsigned tell_threads_to_stop(void)
{
	struct io_uring msg;
	unsigned sent = 0;

	if (io_uring_queue_init(nthreads, &msg, 0) < 0)
		return 0;
	for (unsigned i = 0; i < nthreads; i++) {
		struct io_uring_sqe *sqe;

		if (!atomic_load(&threads[i].looping) || !(sqe = io_uring_get_sqe(&msg)))
			continue;
		io_uring_prep_msg_ring(sqe, threads[i].ring.ring_fd, 0, STOP_DATA, 0);
		sent++;
	}
	if (sent)
		io_uring_submit_and_wait(&msg, sent);
	io_uring_queue_exit(&msg);
	return sent;
}

/* Once the told threads took the stop: a kick for each entry not parked
 * yet, from its queue's CPU (park). A thread that never takes it (a stop
 * signal) is waited for no longer than STOPPING_WAIT_MS. */
static void kick_entries_to_park(unsigned told)
{
	unsigned nq = uring_slots_queues(), kicks[nq ? nq : 1], any = 0;

	for (int ms = 0; atomic_load(&stopping) < told && ms < STOPPING_WAIT_MS; ms++)
		usleep(1000);
	for (unsigned q = 0; q < nq; q++)
		any += kicks[q] = atomic_load(&unparked[q]);
	if (any && kick_path)
		kick_queues(kicks);
}

void uring_stop(void)
{
	unsigned told;

	if (!threads)
		return;
	told = tell_threads_to_stop();
	if (told)
		kick_entries_to_park(told);
	for (unsigned i = 0; i < nthreads; i++) {
		pthread_join(threads[i].thread, NULL);
		if (threads[i].started > 0)
			io_uring_queue_exit(&threads[i].ring);
	}
	free_threads();
}
