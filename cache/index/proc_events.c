#include "cache/index/proc_events.h"
#include "fs/lib/kernel_feature.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/netlink.h>

#include "cache/index/pid_view.h"
#include "cache/index/proc_filter.h"
#include "cache/index/proc_msg.h"
#include "cache/index/tgid_index.h"
#include "cache/nodes/node.h"
#include "fs/lib/clock.h"
#include "fs/lib/log.h"
#include "fs/lib/procfile.h"

/* struct proc_input of Linux 6.6+, spelled out for older headers. */
struct listen_filtered {
	uint32_t mcast_op;
	uint32_t event_type;
};

#define ACK_WAIT_MS 300
/* a batch at least this often, as when the sweeps ran here */
#define IDLE_WAKE_MS 1000
#define BATCH_MS 20     /* how long events gather after a batch: each wakeup of the
			 * listener costs forking processes more than its events do */
#define SYNC_WAIT_MS 50 /* how often a listing waiting for the index lock looks
			 * whether its holder is stopped; the longest it waits
			 * for a rescan */
#define SWEEP_CHUNK 64  /* exited pids swept per hold of the index lock */

/* Datagrams taken per recvmmsg: one event each, so a fork storm costs one
 * system call per batch instead of one per event. A connector event is under
 * 100 bytes; a larger datagram is cut (MSG_TRUNC) and decoded as far as it
 * goes, as any event shorter than expected is (proc_msg.c). */
#define RECV_BATCH 64
#define RECV_SIZE 512

/* Where a socket's datagrams are read to: the two sockets are read at once,
 * the index's under its lock, the threads' by the listener alone. */
struct recv_space {
	char bufs[RECV_BATCH][RECV_SIZE] __attribute__((aligned(NLMSG_ALIGNTO)));
	struct mmsghdr msgs[RECV_BATCH];
	struct iovec iov[RECV_BATCH];
};

/* One of the listener's sockets. Kernels before 6.6 count listeners, not
 * sockets, and never forget one: a listener that closes without asking to be
 * ignored makes every fork, exec and exit on the machine build an event for
 * no one until reboot. */
struct event_socket {
	int fd;
	enum proc_filter_side side; /* what it is for (proc_filter.h) */
	/* Set once the kernel counts this socket among the listeners (a listen
	 * request it took): withdrawn at close. */
	int counted;
	/* Set by a loss (ENOBUFS), until the queue has been read empty: only
	 * then does the kernel report the next loss (netlink stays "congested"
	 * until then), so only then can a scan be trusted to be followed by
	 * every event or by ENOBUFS. */
	int lost;
	struct recv_space *space;
};

/* The index's events, which a root listing applies before it lists; and,
 * where a second socket can be filtered, the threads' (proc_filter.h), which
 * only the listener reads. Without the second, the first has both. */
static struct recv_space procs_space, threads_space;
static struct event_socket procs = { -1, PROC_FILTER_ALL, 0, 0, &procs_space };
static struct event_socket threads = { -1, PROC_FILTER_THREADS, 0, 0, &threads_space };
static int stop_fd = -1;
static pthread_t thread;
static _Atomic int running;
static struct proc_event_hooks hooks;

static int send_request(const struct event_socket *s, const void *op, size_t oplen, uint32_t ack)
{
	char buf[PROC_MSG_REQUEST_SPACE] __attribute__((aligned(NLMSG_ALIGNTO)));
	size_t len = proc_msg_request(buf, op, oplen, ack);

	return send(s->fd, buf, len, 0) < 0 ? -errno : 0;
}

/* Events stamped before the last scan of the source began are in that scan
 * already. Applied after it, they would undo it: after a loss (ENOBUFS), the
 * FORK of a process whose EXIT was lost would list it long after it was
 * reaped. Reading the queue away first cannot tell which events those are:
 * an overflowed socket holds some ten thousand, and a fork storm refills it
 * as fast as it is read. */
static uint64_t scan_began_ns;
static uint64_t timens_offset_ns; /* our CLOCK_MONOTONIC minus the kernel's stamps' */

static uint64_t stamp_clock_ns(void)
{
	return now_ns() - timens_offset_ns;
}

/* A time namespace shifts the daemon's CLOCK_MONOTONIC, not the stamps. */
static void read_timens_offset(void)
{
	FILE *f = fopen("/proc/self/timens_offsets", "re");
	char line[128];
	long long sec, nsec;

	if (!f)
		return; /* no time namespaces in this kernel: no offset */
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "monotonic %lld %lld", &sec, &nsec) == 2)
			timens_offset_ns = (uint64_t)(sec * 1000000000LL + nsec);
	fclose(f);
}

static void rescan(void)
{
	scan_began_ns = stamp_clock_ns();
	tgid_index_resync();
}

/* After ENOBUFS the index's socket still holds events from before the
 * loss: skipped from now on, as the rescan reflects them. The threads'
 * socket lost only cache drops. */
static void note_loss(struct event_socket *s)
{
	if (!s->lost && s->side == PROC_FILTER_THREADS)
		log_info("threads' events lost (ENOBUFS): dropping the names cached");
	else if (!s->lost)
		log_info("process events lost (ENOBUFS): rescanning the source");
	if (s->side != PROC_FILTER_THREADS)
		scan_began_ns = stamp_clock_ns();
	s->lost = 1;
}

/* The kernel answers a request with a PROC_EVENT_NONE carrying its ack + 1
 * and an error code: the answer's error code, or -ETIMEDOUT. Kernels before
 * 6.6 never answer the 8-byte form (struct proc_input), while another
 * listener's events may keep coming: the wait is bounded in all. */
static int wait_ack(struct event_socket *s, uint32_t ack)
{
	char buf[8192] __attribute__((aligned(NLMSG_ALIGNTO)));
	struct pollfd p = { .fd = s->fd, .events = POLLIN };
	uint64_t deadline = now_ns() + ACK_WAIT_MS * 1000000ull;
	uint64_t now;

	while ((now = now_ns()) < deadline &&
	       poll(&p, 1, (int)((deadline - now) / 1000000 + 1)) > 0) {
		ssize_t n = recv(s->fd, buf, sizeof(buf), 0);
		struct proc_msg m;

		if (n < 0 && errno == ENOBUFS) {
			note_loss(s); /* subscribed, and events lost already */
			continue;
		}
		if (n < 0)
			return -errno;
		for (size_t off = 0; proc_msg_next(buf, (size_t)n, &off, &m);)
			if (m.what == PROC_EVENT_NONE && m.ack == ack + 1)
				return -(int)m.err;
	}
	return -ETIMEDOUT;
}

/* The filter is attached before the bind: no event it would drop is
 * queued. Without it the socket still works (the listener applies only its
 * side's events) but reads what it drops: required of the threads' socket
 * alone, whose whole point it is. */
static int open_socket(struct event_socket *s, int rcvbuf)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK, .nl_groups = CN_IDX_PROC };
	int r;

	s->fd = socket(PF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_CONNECTOR);
	if (s->fd < 0)
		return -errno;
	if (rcvbuf > 0 && setsockopt(s->fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof(rcvbuf)) &&
	    setsockopt(s->fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf)))
		log_warn("process events: cannot size socket buffer: %s", strerror(errno));
	if ((r = proc_filter_attach(s->fd, s->side)) && s->side == PROC_FILTER_THREADS)
		return r;
	if (r)
		log_warn("process events: cannot filter threads' events: %s", strerror(-r));
	if (bind(s->fd, (struct sockaddr *)&sa, sizeof(sa)))
		return -errno;
	return 0;
}

/* A filtered subscription (6.6+) is proven by the kernel's answer to it. The
 * kernel filters its answers as it filters events, and an answer (type NONE)
 * is none of the types asked for: so the first request asks for every type
 * (event_type 0 reads as all) and is answered, the second narrows the same
 * socket's filter and is not. An event arriving proves nothing: on kernels
 * before 6.6, which ignore the 8-byte form, another listener's subscription
 * brings events to every socket bound to the group, and they stop when it
 * leaves. 0 filtered, 1 unfiltered, <0 error. */
static int subscribe(struct event_socket *s)
{
	struct listen_filtered any = { PROC_CN_MCAST_LISTEN, 0 };
	struct listen_filtered wanted = { PROC_CN_MCAST_LISTEN,
					  s->side == PROC_FILTER_THREADS ? PROC_EVENTS_OF_THREADS
									 : PROC_EVENTS_WANTED };
	uint32_t op = PROC_CN_MCAST_LISTEN;
	int r;

	if (kernel_feature_allowed(KF_EVENT_FILTER) &&
	    (r = send_request(s, &any, sizeof(any), 0x70660001)) == 0 &&
	    (r = wait_ack(s, 0x70660001)) != -ETIMEDOUT) {
		if (r < 0)
			return r;
		s->counted = 1;
		return send_request(s, &wanted, sizeof(wanted), 0x70660003);
	}
	if ((r = send_request(s, &op, sizeof(op), 0x70660002)))
		return r;
	/* Taken unless refused: the kernel handles a request as it is sent,
	 * and answers EPERM or EINVAL before it counts. Not counted, it is not
	 * withdrawn: an IGNORE counts down unconditionally (before 6.6), and
	 * would take another listener's place in the count. */
	r = wait_ack(s, 0x70660002);
	s->counted = r == 0 || r == -ETIMEDOUT;
	return r == 0 ? 1 : r;
}

static void close_socket(struct event_socket *s)
{
	uint32_t op = PROC_CN_MCAST_IGNORE;
	int r;

	/* no answer is waited for: the kernel handles it as it is sent */
	if (s->fd >= 0 && s->counted && (r = send_request(s, &op, sizeof(op), 0x70660004)))
		log_warn("process events: cannot withdraw the listen request: %s", strerror(-r));
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
	s->counted = 0;
	s->lost = 0;
}

/* The threads' socket where it can be had (filtered and subscribed).
 * 0 or -errno. */
static int open_threads_socket(int rcvbuf)
{
	int r;

	if ((r = open_socket(&threads, rcvbuf)) == 0 && (r = subscribe(&threads)) >= 0)
		return 0;
	close_socket(&threads);
	return r;
}

const char *proc_events_start(const struct proc_events_config *cfg,
			      const struct proc_event_hooks *h)
{
	int rcvbuf = cfg->rcvbuf ? cfg->rcvbuf : 8 << 20;
	int r = -EPERM, apart = 0;

	hooks = *h;
	if (!cfg->disabled)
		apart = open_threads_socket(rcvbuf);
	/* with a threads' socket, the index's leaves their events to it */
	procs.side = threads.fd >= 0 ? PROC_FILTER_PROCESSES : PROC_FILTER_ALL;
	if (!cfg->disabled && (r = open_socket(&procs, rcvbuf)) == 0)
		r = subscribe(&procs);
	if (r < 0) {
		close_socket(&threads);
		close_socket(&procs);
		tgid_index_set_fallback(cfg->fallback_ms);
		tgid_index_refresh();
		log_warn("process events unavailable (%s): listing the root from a scan cached "
			 "for %u ms", cfg->disabled ? "disabled" : strerror(-r), cfg->fallback_ms);
		return "scan";
	}
	if (apart)
		log_warn("process events: threads' events read with the processes' (%s)",
			 strerror(-apart));
	/* Events from now on are queued; those sent after the scan began may
	 * be in it too, which is harmless: marking twice and exiting twice are
	 * idempotent. */
	read_timens_offset();
	rescan();
	return r == 0 ? "events" : "events (unfiltered)";
}

/* Cache drops found while applying events, done by a thread of their own:
 * a drop waits for the directory lock that a root listing holds, and root
 * listings may be waiting for the listener (proc_events_sync). */
enum notice_kind {
	NOTICE_CREDS,  /* a uid or gid changed, or an exec (dumpable) */
	NOTICE_EXITED, /* a leader exited */
	NOTICE_THREAD, /* a thread (pid, of the group of leader group) exited or changed ids */
	NOTICE_LOST,   /* events were lost: whatever they said went unseen */
	NOTICE_UNKNOWN, /* the kernel's caches are another server's (caches_unknown) */
};

struct notice {
	enum notice_kind kind;
	pid_t pid;
	pid_t group; /* NOTICE_THREAD */
};

static struct notice *notices;
static size_t nnotices, notices_cap;
static pthread_mutex_t notice_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t notice_cond = PTHREAD_COND_INITIALIZER;
static int notices_closed;
static int notifier_started, notifier_joined;
static pthread_t notifier;
/* Two threads stop the notifier: the drainer at a stop signal (quiesce) and
 * the server's stop after its loop ends (an unmount). Both come together when
 * a signal follows an unmount, and a thread joined twice is undefined: glibc
 * marks a joined thread's tid -1, and the second join waited on it forever. */
static pthread_mutex_t notifier_join_lock = PTHREAD_MUTEX_INITIALIZER;

static void queue_notice(enum notice_kind kind, pid_t pid, pid_t group)
{
	/* A fork storm's short-lived processes are never looked up: waking the
	 * notifier for each would cost more than their whole index upkeep. A
	 * thread's entries are its own at the root, or its group's task/TID. A
	 * notice of no process (pid 0: a loss, another server's caches) is for
	 * every name. */
	if (pid && hooks.named && !hooks.named(pid) && !(kind == NOTICE_THREAD && hooks.named(group)))
		return;
	pthread_mutex_lock(&notice_lock);
	if (notices_closed) {
		pthread_mutex_unlock(&notice_lock);
		return;
	}
	if (nnotices == notices_cap) {
		size_t cap = notices_cap ? notices_cap * 2 : 256;
		struct notice *more = cap <= 1 << 20 ? realloc(notices, cap * sizeof(*more)) : NULL;

		if (!more) { /* only a cache drop is lost: the entry expires anyway */
			pthread_mutex_unlock(&notice_lock);
			return;
		}
		notices = more;
		notices_cap = cap;
	}
	notices[nnotices++] = (struct notice){ kind, pid, group };
	pthread_cond_signal(&notice_cond);
	pthread_mutex_unlock(&notice_lock);
}

static void apply_notice(const struct notice *n)
{
	if (n->kind == NOTICE_EXITED && hooks.leader_exited)
		hooks.leader_exited(n->pid);
	else if (n->kind == NOTICE_THREAD && hooks.thread_changed)
		hooks.thread_changed(n->pid, n->group);
	else if (n->kind == NOTICE_CREDS && hooks.creds_changed)
		hooks.creds_changed(n->pid);
	else if (n->kind == NOTICE_LOST && hooks.events_lost)
		hooks.events_lost();
	else if (n->kind == NOTICE_UNKNOWN && hooks.caches_unknown)
		hooks.caches_unknown();
}

static void *notify_loop(void *unused)
{
	struct notice *batch = NULL;
	size_t n = 0;

	(void)unused;
	pthread_mutex_lock(&notice_lock);
	for (;;) {
		while (!nnotices && !notices_closed)
			pthread_cond_wait(&notice_cond, &notice_lock);
		if (!nnotices)
			break;
		free(batch);
		batch = notices; /* take the whole batch; the listener starts a new one */
		n = nnotices;
		notices = NULL;
		nnotices = notices_cap = 0;
		pthread_mutex_unlock(&notice_lock);
		for (size_t i = 0; i < n; i++)
			apply_notice(&batch[i]);
		pthread_mutex_lock(&notice_lock);
	}
	pthread_mutex_unlock(&notice_lock);
	free(batch);
	return NULL;
}

static void leader_born(pid_t tgid)
{
	pid_t v = pid_view_leader_born(tgid);

	if (v)
		tgid_index_mark(v);
}

/* Known already, a group keeps its pid in the view: translated again, it
 * would be lost if it is gone by now (a batch applied late), and with it the
 * EXIT that follows. */
/* An exec sets the process dumpable again, or not (a setuid program), which
 * its files' owner shows: the caches drop it as for a change of its ids. */
static void leader_execed(pid_t tgid)
{
	pid_t v = pid_view_leader_known(tgid);

	if (v) {
		tgid_index_mark(v);
		queue_notice(NOTICE_CREDS, v, 0);
	} else {
		leader_born(tgid);
	}
}

static void leader_exited(pid_t tgid)
{
	pid_t v = pid_view_leader_known(tgid);

	pid_view_leader_gone(tgid);
	if (v) {
		tgid_index_exited(v);
		queue_notice(NOTICE_EXITED, v, 0);
	}
}

static void index_lock_take(void);
static void index_lock_drop(void);

/* The view's pid of a group whose thread changed ids, for its notice: the
 * view remembers leaders under the index's lock, and the threads' socket is
 * read without it. */
static pid_t group_known(const struct event_socket *s, pid_t tgid)
{
	pid_t v;

	if (s->side != PROC_FILTER_THREADS || !pid_view_active())
		return pid_view_leader_known(tgid);
	index_lock_take();
	v = pid_view_leader_known(tgid);
	index_lock_drop();
	return v;
}

/* Events carry the daemon's pids; the index holds the view's. s: the
 * socket it came on. */
static void on_event(const struct event_socket *s, const struct proc_msg *m)
{
	pid_t v;

	switch (m->what) {
	case PROC_EVENT_FORK:
		if (m->pid == m->tgid)
			leader_born(m->tgid);
		break;
	case PROC_EVENT_EXEC: /* the group lives on under its tgid */
		leader_execed(m->tgid);
		break;
	case PROC_EVENT_EXIT:
		if (m->pid == m->tgid)
			leader_exited(m->tgid);
		else if (!pid_view_active())
			queue_notice(NOTICE_THREAD, m->pid, m->tgid);
		break;
	case PROC_EVENT_UID:
	case PROC_EVENT_GID:
		if ((v = group_known(s, m->tgid)))
			queue_notice(NOTICE_CREDS, v, 0);
		/* a thread's own ids (setuid by raw syscall): its own directories */
		if (m->pid != m->tgid && !pid_view_active())
			queue_notice(NOTICE_THREAD, m->pid, m->tgid);
		break;
	default:
		break;
	}
}

/* Applies one datagram of s, the events of its side; returns the newest
 * stamp in it (0 when none). The threads' events only drop cached names,
 * which is never wrong: they need not be older than the index's last scan
 * (which is not theirs to read: they are applied without its lock). */
static uint64_t apply_datagram(const struct event_socket *s, const char *buf, size_t len)
{
	struct proc_msg m;
	uint64_t newest = 0;

	for (size_t off = 0; proc_msg_next(buf, len, &off, &m);) {
		if ((s->side == PROC_FILTER_THREADS || m.stamp_ns >= scan_began_ns) &&
		    proc_filter_side_has(s->side, &m))
			on_event(s, &m);
		if (m.stamp_ns > newest)
			newest = m.stamp_ns;
	}
	return newest;
}

/* Once a socket that lost events is read empty: the rescan the index's loss
 * asks for, and the drop of whatever the lost events said. 1 if it was due. */
static int recover_loss(struct event_socket *s)
{
	if (!s->lost)
		return 0;
	s->lost = 0;
	if (s->side != PROC_FILTER_THREADS)
		rescan();
	queue_notice(NOTICE_LOST, 0, 0);
	return 1;
}

/* What drain() ended on. */
enum drained {
	DRAINED,        /* read empty, or up to an event sent after `until` */
	DRAIN_RESCAN,   /* a rescan is due, and the drain is a lister's: the listener's */
	DRAIN_BROKEN,   /* the socket broke */
};

/* Reads and applies the queued events of s: the index's with index_lock
 * held (their buffers and loss state are its), the threads' by the listener
 * alone. The listener reads until the socket is empty and makes the rescan
 * (or the drop) a loss asks for. A lister (listener = 0) stops at the
 * first event stamped at or after `until`, the moment its listing began:
 * that event was queued after the listing began, so every event queued
 * before it is read by then (the socket is a queue), and a fork storm cannot
 * keep it reading. It leaves a rescan to the listener: the scan reads the
 * source as the daemon, and a lister acts as its caller. */
static enum drained drain(struct event_socket *s, int listener, uint64_t until)
{
	char (*bufs)[RECV_SIZE] = s->space->bufs;
	struct mmsghdr *msgs = s->space->msgs;
	struct iovec *iov = s->space->iov;

	for (int i = 0; i < RECV_BATCH; i++) {
		iov[i] = (struct iovec){ .iov_base = bufs[i], .iov_len = RECV_SIZE };
		msgs[i] = (struct mmsghdr){ .msg_hdr = { .msg_iov = &iov[i], .msg_iovlen = 1 } };
	}
	for (;;) {
		uint64_t newest;
		int n;

		if (s->lost && !listener)
			return DRAIN_RESCAN;
		n = recvmmsg(s->fd, msgs, RECV_BATCH, MSG_DONTWAIT, NULL);
		if (n < 0 && errno == ENOBUFS) {
			note_loss(s);
			continue;
		}
		if (n < 0 && errno == EAGAIN && recover_loss(s))
			return DRAINED;
		if (n < 0)
			return errno == EAGAIN || errno == EINTR ? DRAINED : DRAIN_BROKEN;
		newest = 0;
		for (int i = 0; i < n; i++) {
			uint64_t t = apply_datagram(s, bufs[i], msgs[i].msg_len < RECV_SIZE
								? msgs[i].msg_len
								: RECV_SIZE);
			if (t > newest)
				newest = t;
		}
		if (!listener && newest >= until)
			return DRAINED;
	}
}

/* A listing applies the events queued before it began (proc_events_sync):
 * every process that exists for the caller has its FORK event queued by
 * then, so a listing never misses it, and a process whose EXIT is queued is
 * checked against the source. The lister applies them itself, under the lock
 * the listener applies its batches with: waiting for the listener instead
 * cost each listing after a fork (the lister's own, say) a wake-up of that
 * thread and a context switch or two, most of a cold listing on a small
 * machine. Only a rescan after a loss is left to the listener, which the
 * lister then kicks and waits for. "applying" is set while the listener has
 * events read and not yet in the index. */
static pthread_mutex_t sync_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t sync_cond = PTHREAD_COND_INITIALIZER;
static unsigned long applied_batches; /* under sync_lock */
static _Atomic int applying;
static int kick_fd = -1;

/* A batch, a lister's drain and a sweep of the index (from the timers'
 * thread) exclude each other: the index has one writer at a time, the drain's
 * buffers and the loss state are shared, and the sweep unmarks exited pids a
 * batch may mark again. */
static pthread_mutex_t index_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic pid_t index_holder; /* the thread holding it, 0 if none */

/* SYNC_WAIT_MS from now, for the timed waits */
static struct timespec sync_deadline(void)
{
	struct timespec t;

	clock_gettime(CLOCK_REALTIME, &t);
	t.tv_nsec += SYNC_WAIT_MS * 1000000L;
	t.tv_sec += t.tv_nsec / 1000000000L;
	t.tv_nsec %= 1000000000L;
	return t;
}

static void index_lock_take(void)
{
	pthread_mutex_lock(&index_lock);
	atomic_store(&index_holder, gettid());
}

static void index_lock_drop(void)
{
	atomic_store(&index_holder, 0);
	pthread_mutex_unlock(&index_lock);
}

/* A lister waits for the lock as long as its holder runs: a batch or a
 * chunk of the sweep always ends, however long a starved machine takes to
 * run it (a lister that gave up after a fixed time listed a reaped process).
 * Only a holder stopped by ptrace or a signal never gives it back: the lister
 * then lists without the queued events, as the index stood. */
static int index_lock_for_listing(void)
{
	for (;;) {
		struct timespec deadline = sync_deadline();
		pid_t holder;

		if (!pthread_mutex_timedlock(&index_lock, &deadline)) {
			atomic_store(&index_holder, gettid());
			return 0;
		}
		holder = atomic_load(&index_holder);
		if (holder && procfile_own_thread_stopped(holder)) {
			log_debug("listing without the queued events: thread %d holds the index, stopped", holder);
			return -1;
		}
	}
}

/* Of the index's events: a listing never waits for the threads'. */
static int events_pending(void)
{
	struct pollfd p = { .fd = procs.fd, .events = POLLIN };

	return atomic_load(&applying) || poll(&p, 1, 0) > 0;
}

/* The listener's way, for a rescan: kick it and wait for its batches until
 * nothing is queued, SYNC_WAIT_MS at most. Unlike the lock, this wait is
 * bounded by time: after a loss a fork storm can keep the queue full as long
 * as it lasts, and the listing is as good as the rescan anyway. */
static void wait_for_listener(void)
{
	struct timespec deadline = sync_deadline();
	uint64_t one = 1;

	pthread_mutex_lock(&sync_lock);
	while (events_pending()) {
		unsigned long target = applied_batches + 1;

		if (write(kick_fd, &one, sizeof(one)) < 0)
			break;
		while (applied_batches < target)
			if (pthread_cond_timedwait(&sync_cond, &sync_lock, &deadline))
				goto out;
	}
out:
	pthread_mutex_unlock(&sync_lock);
}

void proc_events_sync(void)
{
	uint64_t began;
	enum drained r = DRAINED;

	if (!running || !events_pending())
		return;
	began = stamp_clock_ns();
	/* The listener holds the lock while it applies a batch: then the events
	 * are in the index when the lock is ours. */
	if (index_lock_for_listing())
		return;
	if (running)
		r = drain(&procs, 0, began);
	index_lock_drop();
	if (r == DRAIN_RESCAN)
		wait_for_listener();
}

/* Waking for every event would cost forking processes a context switch
 * each on small machines: after a batch, events gather for a moment unless
 * a listing asks for them. */
static void batch_pause(void)
{
	struct pollfd p = { .fd = kick_fd, .events = POLLIN };

	poll(&p, 1, BATCH_MS);
}

/* The threads' events after the index's, without its lock: a listing that
 * meets a thread storm waits for neither. */
static int apply_batch(void)
{
	enum drained r;

	index_lock_take();
	atomic_store(&applying, 1);
	r = drain(&procs, 1, 0);
	atomic_store(&applying, 0);
	index_lock_drop();
	if (r != DRAIN_BROKEN && threads.fd >= 0)
		r = drain(&threads, 1, 0);
	pthread_mutex_lock(&sync_lock);
	applied_batches++;
	pthread_cond_broadcast(&sync_cond);
	pthread_mutex_unlock(&sync_lock);
	return r == DRAIN_BROKEN ? -1 : 0;
}

static void *listen_loop(void *unused)
{
	/* the threads' socket last: poll skips a negative fd */
	struct pollfd p[4] = { { .fd = procs.fd, .events = POLLIN }, { .fd = stop_fd, .events = POLLIN },
			       { .fd = kick_fd, .events = POLLIN }, { .fd = threads.fd, .events = POLLIN } };
	uint64_t count;

	(void)unused;
	while (!(p[1].revents & POLLIN)) {
		if (poll(p, 4, IDLE_WAKE_MS) < 0 && errno != EINTR)
			break;
		if ((p[2].revents & POLLIN) && read(kick_fd, &count, sizeof(count)) < 0)
			break;
		if (apply_batch() < 0) {
			log_err("process events: %s; listing from scans from now on", strerror(errno));
			tgid_index_set_fallback(100);
			break;
		}
		if (((p[0].revents | p[3].revents) & POLLIN) && !(p[2].revents & POLLIN))
			batch_pause();
	}
	/* Wake any waiting listing for good. */
	pthread_mutex_lock(&sync_lock);
	applied_batches = ~0UL >> 1;
	pthread_cond_broadcast(&sync_cond);
	pthread_mutex_unlock(&sync_lock);
	return NULL;
}

void proc_events_caches_unknown(void)
{
	if (notifier_started)
		queue_notice(NOTICE_UNKNOWN, 0, 0);
}

void proc_events_sweep(void)
{
	/* as before the timers had a thread of their own: with events only */
	if (procs.fd < 0 || !running)
		return;
	/* A few exited pids per hold of the lock: after a fork storm thousands
	 * wait, each a look at the source, and listers take this lock. */
	for (int64_t from = 0; from >= 0;) {
		index_lock_take();
		from = tgid_index_sweep((uint32_t)from, SWEEP_CHUNK);
		index_lock_drop();
	}
}

int proc_events_run(void)
{
	if (procs.fd < 0)
		return 0;
	stop_fd = eventfd(0, EFD_CLOEXEC);
	kick_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (stop_fd < 0 || kick_fd < 0)
		return -errno;
	notices_closed = notifier_joined = 0;
	if (pthread_create(&notifier, NULL, notify_loop, NULL))
		return -EAGAIN;
	notifier_started = 1;
	running = 1;
	if (pthread_create(&thread, NULL, listen_loop, NULL)) {
		running = 0;
		proc_events_stop();
		return -EAGAIN;
	}
	/* Named for top -H and for tests that stop one of them (ptrace). */
	pthread_setname_np(notifier, "pf-notify");
	pthread_setname_np(thread, "pf-events");
	return 0;
}

/* Closes the queue (its notices dropped) and joins the notifier, once. */
static void join_notifier(void)
{
	pthread_mutex_lock(&notifier_join_lock);
	if (notifier_started && !notifier_joined) {
		pthread_mutex_lock(&notice_lock);
		notices_closed = 1;
		free(notices);
		notices = NULL;
		nnotices = notices_cap = 0;
		pthread_cond_signal(&notice_cond);
		pthread_mutex_unlock(&notice_lock);
		pthread_join(notifier, NULL);
		notifier_joined = 1;
	}
	pthread_mutex_unlock(&notifier_join_lock);
}

void proc_events_stop_notices(void)
{
	join_notifier();
}

void proc_events_stop(void)
{
	if (running) {
		uint64_t one = 1;

		/* under the lock: a lister draining the socket is done with it */
		index_lock_take();
		running = 0;
		index_lock_drop();
		if (write(stop_fd, &one, sizeof(one)) < 0)
			log_err("cannot stop the event listener: %s", strerror(errno));
		pthread_join(thread, NULL);
	}
	join_notifier();
	if (stop_fd >= 0)
		close(stop_fd);
	if (kick_fd >= 0)
		close(kick_fd);
	stop_fd = kick_fd = -1;
	close_socket(&threads);
	close_socket(&procs);
}
