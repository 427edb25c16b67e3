#include "cache/proc_events.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/netlink.h>

#include "cache/tgid_index.h"
#include "fs/log.h"

/* struct proc_input of Linux 6.6+, spelled out for older headers. */
struct listen_filtered {
	uint32_t mcast_op;
	uint32_t event_type;
};

#define WANTED_EVENTS (PROC_EVENT_FORK | PROC_EVENT_EXEC | PROC_EVENT_EXIT | \
		       PROC_EVENT_UID | PROC_EVENT_GID)
#define ACK_WAIT_MS 300
#define SWEEP_MS 1000

static int sock = -1;
static int stop_fd = -1;
static pthread_t thread;
static int running;
static struct proc_event_hooks hooks;
static _Atomic unsigned long resyncs;

/* The event sits 36 bytes into the message, misaligned for its 8-byte
 * fields: copy it out instead of pointing into the buffer. */
static void event_copy(struct proc_event *ev, const struct nlmsghdr *nh)
{
	const struct cn_msg *cn = NLMSG_DATA(nh);
	size_t len = cn->len < sizeof(*ev) ? cn->len : sizeof(*ev);

	memset(ev, 0, sizeof(*ev));
	memcpy(ev, cn->data, len);
}

static int send_listen(const void *op, size_t oplen, uint32_t ack)
{
	char buf[NLMSG_SPACE(sizeof(struct cn_msg) + sizeof(struct listen_filtered))] = { 0 };
	struct nlmsghdr *nh = (struct nlmsghdr *)buf;
	struct cn_msg *cn = NLMSG_DATA(nh);

	nh->nlmsg_len = (uint32_t)NLMSG_LENGTH(sizeof(*cn) + oplen);
	nh->nlmsg_type = NLMSG_DONE;
	nh->nlmsg_pid = 0;
	cn->id.idx = CN_IDX_PROC;
	cn->id.val = CN_VAL_PROC;
	cn->ack = ack;
	cn->len = (uint16_t)oplen;
	memcpy(cn->data, op, oplen);
	return send(sock, nh, nh->nlmsg_len, 0) < 0 ? -errno : 0;
}

/* The kernel answers a listen request with a PROC_EVENT_NONE carrying our
 * ack + 1 and an error code. Kernels before 6.6 ignore the 8-byte form and
 * never answer it; 6.6+ accept it but then filter the answer away with every
 * other PROC_EVENT_NONE. So a filtered subscription is proven by an event:
 * the fork and exit of a child made for the purpose (probe > 0).
 * Returns the ack's error code, 0 on the probe's event, or -ETIMEDOUT. */
static int wait_ack_or_event(uint32_t ack, pid_t probe)
{
	char buf[8192] __attribute__((aligned(NLMSG_ALIGNTO)));
	struct pollfd p = { .fd = sock, .events = POLLIN };

	while (poll(&p, 1, ACK_WAIT_MS) > 0) {
		ssize_t n = recv(sock, buf, sizeof(buf), 0);

		if (n < 0)
			return -errno;
		for (struct nlmsghdr *nh = (struct nlmsghdr *)buf; NLMSG_OK(nh, (size_t)n);
		     nh = NLMSG_NEXT(nh, n)) {
			struct cn_msg *cn = NLMSG_DATA(nh);
			struct proc_event ev;

			event_copy(&ev, nh);
			if (ev.what == PROC_EVENT_NONE && cn->ack == ack + 1)
				return -(int)ev.event_data.ack.err;
			if (probe > 0 && ev.what == PROC_EVENT_FORK && ev.event_data.fork.child_pid == probe)
				return 0;
		}
	}
	return -ETIMEDOUT;
}

static int open_socket(int rcvbuf)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK, .nl_groups = CN_IDX_PROC };

	sock = socket(PF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_CONNECTOR);
	if (sock < 0)
		return -errno;
	if (rcvbuf > 0 && setsockopt(sock, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof(rcvbuf)) &&
	    setsockopt(sock, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf)))
		log_warn("process events: cannot size socket buffer: %s", strerror(errno));
	if (bind(sock, (struct sockaddr *)&sa, sizeof(sa)))
		return -errno;
	return 0;
}

static pid_t fork_probe(void)
{
	pid_t child = fork();

	if (child == 0)
		_exit(0);
	if (child > 0)
		waitpid(child, NULL, 0);
	return child;
}

/* 0 filtered, 1 unfiltered, <0 error. */
static int subscribe(void)
{
	struct listen_filtered filtered = { PROC_CN_MCAST_LISTEN, WANTED_EVENTS };
	uint32_t op = PROC_CN_MCAST_LISTEN;
	int r;

	if ((r = send_listen(&filtered, sizeof(filtered), 0x70660001)) == 0 &&
	    (r = wait_ack_or_event(0x70660001, fork_probe())) != -ETIMEDOUT)
		return r;
	if ((r = send_listen(&op, sizeof(op), 0x70660002)))
		return r;
	r = wait_ack_or_event(0x70660002, 0);
	return r == 0 ? 1 : r;
}

static void close_socket(void)
{
	if (sock >= 0)
		close(sock);
	sock = -1;
}

const char *proc_events_start(const struct proc_events_config *cfg,
			      const struct proc_event_hooks *h)
{
	int r = -EPERM;

	hooks = *h;
	if (!cfg->disabled && (r = open_socket(cfg->rcvbuf ? cfg->rcvbuf : 8 << 20)) == 0)
		r = subscribe();
	if (r < 0) {
		close_socket();
		tgid_index_set_fallback(cfg->fallback_ms);
		tgid_index_refresh();
		log_warn("process events unavailable (%s): listing the root from a scan cached "
			 "for %u ms", cfg->disabled ? "disabled" : strerror(-r), cfg->fallback_ms);
		return "scan";
	}
	/* Events from now on are queued; the scan may see some of them too,
	 * which is harmless: marking twice and exiting twice are idempotent. */
	tgid_index_resync();
	return r == 0 ? "events" : "events (unfiltered)";
}

static void on_event(const struct proc_event *ev)
{
	switch (ev->what) {
	case PROC_EVENT_FORK:
		if (ev->event_data.fork.child_pid == ev->event_data.fork.child_tgid)
			tgid_index_mark(ev->event_data.fork.child_tgid);
		break;
	case PROC_EVENT_EXEC:
		tgid_index_revived(ev->event_data.exec.process_tgid);
		break;
	case PROC_EVENT_EXIT:
		if (ev->event_data.exit.process_pid == ev->event_data.exit.process_tgid) {
			tgid_index_exited(ev->event_data.exit.process_tgid);
			if (hooks.leader_exited)
				hooks.leader_exited(ev->event_data.exit.process_tgid);
		}
		break;
	case PROC_EVENT_UID:
	case PROC_EVENT_GID:
		if (hooks.creds_changed)
			hooks.creds_changed(ev->event_data.id.process_tgid);
		break;
	default:
		break;
	}
}

static void resync_after_loss(void)
{
	atomic_fetch_add(&resyncs, 1);
	log_info("process events lost (ENOBUFS): rescanning the source");
	tgid_index_resync();
}

/* Reads everything queued; returns -1 when the socket broke. */
static int drain(void)
{
	char buf[65536] __attribute__((aligned(NLMSG_ALIGNTO)));

	for (;;) {
		ssize_t n = recv(sock, buf, sizeof(buf), MSG_DONTWAIT);

		if (n < 0 && errno == ENOBUFS) {
			resync_after_loss();
			continue;
		}
		if (n < 0)
			return errno == EAGAIN || errno == EINTR ? 0 : -1;
		for (struct nlmsghdr *nh = (struct nlmsghdr *)buf; NLMSG_OK(nh, (size_t)n);
		     nh = NLMSG_NEXT(nh, n)) {
			struct proc_event ev;

			event_copy(&ev, nh);
			on_event(&ev);
		}
	}
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void *listen_loop(void *unused)
{
	struct pollfd p[2] = { { .fd = sock, .events = POLLIN }, { .fd = stop_fd, .events = POLLIN } };
	uint64_t last_sweep = now_ms();

	(void)unused;
	while (!(p[1].revents & POLLIN)) {
		if (poll(p, 2, SWEEP_MS) < 0 && errno != EINTR)
			break;
		if ((p[0].revents & POLLIN) && drain() < 0) {
			log_err("process events: %s; listing from scans from now on", strerror(errno));
			tgid_index_set_fallback(100);
			break;
		}
		if (now_ms() - last_sweep >= SWEEP_MS) {
			tgid_index_sweep();
			last_sweep = now_ms();
		}
	}
	return NULL;
}

int proc_events_run(void)
{
	if (sock < 0)
		return 0;
	stop_fd = eventfd(0, EFD_CLOEXEC);
	if (stop_fd < 0)
		return -errno;
	if (pthread_create(&thread, NULL, listen_loop, NULL)) {
		close(stop_fd);
		return -EAGAIN;
	}
	running = 1;
	return 0;
}

void proc_events_stop(void)
{
	if (running) {
		uint64_t one = 1;

		if (write(stop_fd, &one, sizeof(one)) < 0)
			log_err("cannot stop the event listener: %s", strerror(errno));
		pthread_join(thread, NULL);
		running = 0;
		close(stop_fd);
	}
	close_socket();
}

unsigned long proc_events_resyncs(void)
{
	return atomic_load(&resyncs);
}
