/* The supervisor: the mount outlives the daemon that serves it.
 *
 * The process that mounted keeps the /dev/fuse session fd for the life of the
 * mount and serves through a child, the server. While any process holds that
 * fd the kernel keeps the connection: requests wait in its queue. If the
 * server dies (a crash, SIGKILL, the OOM killer), a new one is forked from the
 * supervisor's pristine state and serves the same connection, so the mount
 * and every bind of it in every container answer again instead of failing
 * with ENOTCONN as they would for LXCFS. Node ids the kernel still holds from
 * the dead server are answered ESTALE (request.h) and looked up again; a
 * server stopped by draining (an upgrade, a takeover) leaves its node table
 * in the slot's memfd for the next (cache/nodes/node_record.h) instead.
 *
 * Each server reads through its own clones of the fd (libfuse's clone_fd):
 * when it dies, the requests it had taken end at once with ECONNABORTED
 * instead of waiting for an answer that cannot come.
 *
 * SIGHUP upgrades: the supervisor stops the server and executes the binary
 * installed at its own path again (a package upgrade replaced it), handing it
 * the session fd; the new supervisor resumes the connection instead of
 * mounting. What it hands on is one record (handover.h). An upgrade that
 * comes before the first server answered the kernel's INIT says so
 * (init_pending): the next supervisor's server is then a first one, which
 * answers that INIT.
 *
 * SIGTERM or SIGINT to the supervisor stop the server and unmount. A server
 * that exits by itself (the mount went away, or it was told to stop) ends its
 * mount. Five deaths within ten seconds are taken as a fault that a restart
 * cannot mend: the supervisor unmounts that mount, and exits 1 in the end.
 * A mount ended so is unmounted, then aborted (fuse_conn.c), so that no
 * request it holds waits for a server that will not come.
 *
 * With -o takeover, a new daemon started at the same control= socket becomes
 * this one's successor (takeover.h): SIGTERM then passes every mount on to
 * it instead of unmounting.
 *
 * With -o control=SOCKET the supervisor also holds mounts that other procfast
 * processes made and handed over (control.c), each in a slot of its own
 * (mount_slot.c) served by its own server process: a server executes our
 * binary with that mount's command line, so it starts as clean as a first
 * one. The supervisor lives while any of its mounts does.
 */
#include "fs/supervisor/supervisor.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/fuse.h>

#include "fs/lib/cleanup.h"
#include "fs/lib/log.h"
#include "fs/supervisor/control.h"
#include "fs/supervisor/exec_env.h"
#include "fs/supervisor/handover.h"
#include "fs/supervisor/mount_slot.h"
#include "fs/supervisor/slot_server.h"
#include "fs/supervisor/takeover.h"
#include "fs/transport/fuse_conn.h"

#define DEATH_WINDOW_S 10

/* In a first server: where to say that it answered INIT (mount_slot_fork). */
static int ready_fd = -1;
/* In a server: its mount's node record. In a supervisor an upgrade
 * executed: its own mount's, until supervisor_init takes it. */
static int nodes_fd = -1;

int supervisor_nodes_fd(void)
{
	return nodes_fd;
}

void supervisor_connection_ready(void)
{
	if (ready_fd >= 0) {
		char one = 1;

		if (write(ready_fd, &one, 1) < 0)
			log_warn("cannot tell the supervisor: %s", strerror(errno));
		close(ready_fd);
		ready_fd = -1;
	}
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

enum supervisor_role supervisor_serve_role(struct handover *h)
{
	static const enum supervisor_role of[] = { [HANDOVER_SUPERVISE] = SUPERVISOR_DONE,
						   [HANDOVER_SERVE_FIRST] = SERVE_FIRST,
						   [HANDOVER_SERVE_RESUMED] = SERVE_RESUMED };

	if (h->serve == HANDOVER_SUPERVISE)
		return SUPERVISOR_DONE;
	nodes_fd = h->nodes_fd;
	ready_fd = h->ready_fd;
	h->nodes_fd = h->ready_fd = -1;
	if (h->log_syslog)
		log_to_syslog();
	return of[h->serve];
}

/* What the supervisor holds: our own mount (slots[0]; its fd is the
 * session's) and the handed-over ones. */
static struct mount_slot **slots;
static size_t nslots;
static int own_active = 1;
static int control_fd = -1;
static int signal_fd = -1;
static int gave_up;
static int successor_fd = -1; /* a daemon waiting to take our mounts over */
static int handed_over;

int supervisor_handed_over(void)
{
	return handed_over;
}

static void drop_slot(size_t i, int err)
{
	mount_slot_free(slots[i], err);
	slots[i] = slots[--nslots];
}

/* What the next supervisor takes on, as this one holds it now: an upgrade's
 * binary (with the successor, if one waits), or a successor (takeover.c). */
static void what_we_hold(struct handover *h, int with_successor)
{
	handover_init(h);
	h->session_fd = slots[0]->fd;
	h->nodes_fd = slots[0]->nodes_fd;
	h->rings_fd = slots[0]->rings_fd;
	/* A SIGHUP or a takeover before the first server answered INIT: the
	 * kernel's INIT still waits, for the next first server (a resumed one
	 * would refuse it, and the kernel would then refuse every request). */
	h->init_pending = !slots[0]->ready;
	h->control_fd = control_fd;
	h->successor_fd = with_successor ? successor_fd : -1;
	h->mounts = slots + 1;
	h->nmounts = nslots - 1;
}

/* Executes the binary at our own path, keeping the session fds open. Returns
 * only if that failed. */
static void upgrade(char **argv)
{
	char exe[PATH_MAX];
	struct handover h;
	struct handover_pass pass;
	int r = self_exe(exe, sizeof(exe));

	what_we_hold(&h, 1);
	if (r || (r = handover_pass_on(&h, &pass))) {
		log_err("cannot upgrade: %s", strerror(-r));
		return;
	}
	log_info("upgrading: executing %s", exe);
	execv(exe, argv);
	log_err("cannot execute %s: %s", exe, strerror(errno));
	handover_unpass(&h, &pass);
}

/* Sends the successor what it would take on now. A successor that cannot be
 * told is one no more. */
static int offer_to_successor(int final)
{
	int fds[240], r;
	pid_t servers[64];
	size_t nservers = 0, nfds, len;
	char *record = NULL;
	struct handover h;
	struct handover_pass pass;

	if (successor_fd < 0)
		return -ENOENT;
	for (size_t i = 0; i < nslots && nservers < 64; i++)
		if (slots[i]->server > 0)
			servers[nservers++] = slots[i]->server;
	what_we_hold(&h, 0);
	if (!(r = handover_encode(&h, &record, &len)) && !(r = handover_pass_legacy(&h, &pass))) {
		/* the fds the record names, and the legacy table's memfd; the
		 * record goes as bytes (takeover.c) */
		nfds = handover_fds(&h, fds, 239);
		if (pass.table >= 0)
			fds[nfds++] = pass.table;
		r = takeover_send(successor_fd, final, fds, nfds, servers, nservers, record, len);
		handover_unpass(&h, &pass);
	}
	free(record);
	if (r) {
		log_err("cannot hand our mounts to the successor: %s", strerror(-r));
		close(successor_fd);
		successor_fd = -1;
	}
	return r;
}

/* A successor says nothing until the end: anything readable is its end. */
static void successor_gone(void)
{
	log_info("the successor went away before taking over");
	close(successor_fd);
	successor_fd = -1;
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

/* In a server of our own mount: nothing of the supervisor's is its own. */
static void become_own_server(const sigset_t *old)
{
	sigprocmask(SIG_SETMASK, old, NULL);
	close(signal_fd);
	nodes_fd = slots[0]->nodes_fd;
	if (slots[0]->rings_fd >= 0) /* mapped: the supervisor holds it */
		close(slots[0]->rings_fd);
	slots[0]->rings_fd = -1;
	if (control_fd >= 0)
		close(control_fd);
	if (successor_fd >= 0)
		close(successor_fd);
	while (nslots > 1) {
		struct mount_slot *s = slots[--nslots];

		if (s->join.conn >= 0) /* its sender is the supervisor's to answer */
			close(s->join.conn);
		s->join.conn = -1;
		mount_slot_free(s, 0);
	}
}

/* Too many deaths in a short time: restarting would not help. */
static int too_many_deaths(struct mount_slot *s)
{
	time_t now = time(NULL);
	int recent = 0;

	s->deaths[s->next_death] = now;
	s->next_death = (s->next_death + 1) % SLOT_MAX_DEATHS;
	for (int i = 0; i < SLOT_MAX_DEATHS; i++)
		recent += s->deaths[i] && now - s->deaths[i] < DEATH_WINDOW_S;
	return recent >= SLOT_MAX_DEATHS;
}

static void describe_death(pid_t pid, int wstatus)
{
	if (WIFSIGNALED(wstatus))
		log_err("server %d killed by signal %d: starting another", pid, WTERMSIG(wstatus));
	else
		log_err("server %d exited with %d: starting another", pid, WEXITSTATUS(wstatus));
}

/* A mount is over: its own process unmounts and aborts ours; a handed-over
 * one is unmounted here where its path is ours too, and aborted (fuse_conn.c:
 * every request it holds ends). */
static void end_slot(size_t i, void (*unmount_own)(void), int err)
{
	if (i == 0) {
		own_active = 0;
		unmount_own();
		return;
	}
	umount2(slots[i]->join.mountpoint, MNT_DETACH);
	fuse_conn_abort(slots[i]->fd, slots[i]->conn);
	drop_slot(i, err);
	if (successor_fd >= 0)
		offer_to_successor(0);
}

static size_t slot_of(pid_t pid)
{
	for (size_t i = 0; i < nslots; i++)
		if (slots[i]->server == pid)
			return i;
	return nslots;
}

/* A first server's report: it answered INIT, and a handed-over mount's
 * sender may go; or it ended without (EOF), which server_ended tells the
 * sender once the mount is given up. */
static void slot_ready(struct mount_slot *s)
{
	char one;

	if (read(s->ready_rd, &one, 1) == 1) {
		s->ready = 1;
		join_request_answer(s->join.conn, 0);
		s->join.conn = -1;
	}
	close(s->ready_rd);
	s->ready_rd = -1;
}

/* A first server's report, if it came before it died or was stopped. */
static void check_ready(struct mount_slot *s)
{
	if (s->ready_rd >= 0 &&
	    poll(&(struct pollfd){ .fd = s->ready_rd, .events = POLLIN }, 1, 0) == 1)
		slot_ready(s);
}

static void server_ended(pid_t pid, int wstatus, void (*unmount_own)(void))
{
	size_t i = slot_of(pid);
	struct mount_slot *s;

	if (i == nslots)
		return;
	s = slots[i];
	s->server = 0;
	check_ready(s);
	if ((WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) || fuse_conn_gone(s->fd))
		return end_slot(i, unmount_own, -EIO);
	if (i > 0 && !s->ready) { /* its sender is still there to be told */
		log_err("the server for %s ended before serving it: refusing the mount",
			s->join.mountpoint);
		return end_slot(i, unmount_own, -EIO);
	}
	describe_death(pid, wstatus);
	if (too_many_deaths(s)) {
		log_err("servers keep dying: giving up the mount%s%s", i ? " " : "",
			i ? s->join.mountpoint : "");
		gave_up = 1;
		end_slot(i, unmount_own, -EIO);
	}
}

static void stop_servers(void)
{
	for (size_t i = 0; i < nslots; i++)
		if (slots[i]->server > 0)
			kill(slots[i]->server, SIGTERM);
	for (size_t i = 0; i < nslots; i++)
		if (slots[i]->server > 0) {
			waitpid(slots[i]->server, NULL, 0);
			slots[i]->server = 0;
			check_ready(slots[i]);
		}
}

static void take_successor(struct join_request *r)
{
	if (successor_fd >= 0) {
		log_err("refused a second successor");
		join_request_answer(r->conn, -EBUSY);
	} else {
		successor_fd = r->conn;
		if (offer_to_successor(0) == 0)
			log_info("a successor (pid %d) waits to take our mounts over", (int)r->sender);
	}
	r->conn = -1;
	join_request_free(r);
}

static void take_join(void)
{
	struct join_request r;
	struct mount_slot *s, **more;

	if (control_accept(control_fd, &r))
		return;
	if (r.successor) {
		take_successor(&r);
		return;
	}
	s = mount_slot_from_join(&r);
	more = s ? realloc(slots, (nslots + 1) * sizeof(*more)) : NULL;
	if (!more) {
		log_err("cannot take a mount over: out of memory");
		if (s)
			mount_slot_free(s, -ENOMEM);
		else
			join_request_free(&r);
		return;
	}
	slots = more;
	slots[nslots++] = s;
	log_info("serving %s, handed over", s->join.mountpoint);
	if (successor_fd >= 0)
		offer_to_successor(0);
}

enum step { STEP_ON, STEP_DONE, STEP_UPGRADE };

static enum step on_signal(void (*unmount_own)(void))
{
	struct signalfd_siginfo si;
	int wstatus;
	pid_t pid;

	if (read(signal_fd, &si, sizeof(si)) != sizeof(si))
		return STEP_ON;
	switch (si.ssi_signo) {
	case SIGCHLD:
		while ((pid = waitpid(-1, &wstatus, WNOHANG)) > 0)
			server_ended(pid, wstatus, unmount_own);
		return STEP_ON;
	case SIGHUP:
		stop_servers();
		return STEP_UPGRADE;
	default: /* SIGTERM, SIGINT */
		stop_servers();
		if (successor_fd >= 0 && offer_to_successor(1) == 0) {
			log_info("handed every mount over to the successor");
			handed_over = 1;
			return STEP_DONE;
		}
		while (nslots > 1)
			end_slot(nslots - 1, unmount_own, -ECONNABORTED);
		return STEP_DONE;
	}
}

/* Waits for a signal, a hand-over, a successor's end or a first server's
 * INIT: p[3 + i] is slot i's report. */
static enum step wait_step(void (*unmount_own)(void))
{
	size_t n = 3 + nslots;
	__do_free struct pollfd *p = calloc(n, sizeof(*p));

	if (!p) {
		sleep(1); /* out of memory: the signals wait in the queue */
		return STEP_ON;
	}
	p[0] = (struct pollfd){ .fd = signal_fd, .events = POLLIN };
	p[1] = (struct pollfd){ .fd = control_fd, .events = POLLIN };
	p[2] = (struct pollfd){ .fd = successor_fd, .events = POLLIN };
	for (size_t i = 0; i < nslots; i++)
		p[3 + i] = (struct pollfd){ .fd = slots[i]->ready_rd, .events = POLLIN };
	if (poll(p, n, -1) < 0)
		return STEP_ON;
	for (size_t i = 0; i < nslots; i++)
		if (p[3 + i].revents && slots[i]->ready_rd >= 0)
			slot_ready(slots[i]);
	if (p[2].revents && successor_fd >= 0)
		successor_gone();
	if (p[1].revents & POLLIN)
		take_join();
	return p[0].revents & POLLIN ? on_signal(unmount_own) : STEP_ON;
}

/* Starts a server for every mount without one. Returns the role in a new
 * server of our own mount, SUPERVISOR_DONE in the supervisor. */
static enum supervisor_role start_servers(const sigset_t *old)
{
	int started = 0;

	for (size_t i = 0; i < nslots; i++) {
		struct mount_slot *s = slots[i];

		if (s->server || (i == 0 && !own_active))
			continue;
		s->server = i ? slot_server_start(s, old) : mount_slot_fork(s, &ready_fd);
		if (s->server == 0) {
			become_own_server(old);
			return s->ready ? SERVE_RESUMED : SERVE_FIRST;
		}
		if (s->server < 0) {
			log_err("cannot start a server: %s", strerror(errno));
			s->server = 0;
		}
		started |= s->server > 0;
	}
	if (started && successor_fd >= 0) /* the servers it would stop if we died */
		offer_to_successor(0);
	return SUPERVISOR_DONE;
}

/* Our own mount in slots[0], and what an upgrade handed on (h): its
 * handed-over mounts after it. */
static int supervisor_init(int fd, struct handover *h, int control, const sigset_t *set)
{
	struct mount_slot **more;

	signal_fd = signalfd(-1, set, SFD_CLOEXEC);
	slots = calloc(1, sizeof(*slots));
	if (signal_fd < 0 || !slots || !(slots[0] = calloc(1, sizeof(**slots))))
		return -ENOMEM;
	nslots = 1;
	slots[0]->fd = fd;
	slots[0]->ready = h->session_fd >= 0 && !h->init_pending;
	slots[0]->ready_rd = -1;
	slots[0]->rings_fd = h->rings_fd; /* held here, handed on by what_we_hold */
	h->rings_fd = -1;
	slots[0]->join.conn = slots[0]->join.fuse_fd = slots[0]->join.nsfd = -1;
	slots[0]->nodes_fd = h->nodes_fd; /* an upgrade's, or none yet */
	h->nodes_fd = -1;
	mount_slot_hold_nodes(slots[0]);
	control_fd = control >= 0 ? control : h->control_fd;
	successor_fd = h->successor_fd;
	h->control_fd = h->successor_fd = -1;
	if (!h->nmounts)
		return 0;
	if (!(more = realloc(slots, (1 + h->nmounts) * sizeof(*more))))
		return -ENOMEM;
	slots = more;
	memcpy(slots + 1, h->mounts, h->nmounts * sizeof(*more));
	nslots += h->nmounts;
	free(h->mounts);
	h->mounts = NULL;
	h->nmounts = 0;
	return 0;
}

enum supervisor_role supervisor_run(struct fuse_session *se, char **argv, struct handover *h,
				    int control, void (*unmount_own)(void), int *status)
{
	sigset_t set = handled_signals(), old;
	enum supervisor_role role;
	enum step step;
	int r;

	sigprocmask(SIG_BLOCK, &set, &old);
	if ((r = supervisor_init(fuse_session_fd(se), h, control, &set))) {
		/* Serving here instead would leave the mount to a process that
		 * believes a supervisor unmounts it: give the mount up. */
		log_err("cannot start the supervisor: %s", strerror(-r));
		*status = 1;
		sigprocmask(SIG_SETMASK, &old, NULL);
		return SUPERVISOR_DONE;
	}
	for (;;) {
		if ((role = start_servers(&old)) != SUPERVISOR_DONE)
			return role;
		if (!own_active && nslots == 1)
			break; /* no mount left */
		step = wait_step(unmount_own);
		if (step == STEP_DONE)
			break;
		if (step == STEP_UPGRADE) {
			sigprocmask(SIG_SETMASK, &old, NULL);
			upgrade(argv);
			sigprocmask(SIG_BLOCK, &set, &old);
		}
	}
	*status = gave_up;
	sigprocmask(SIG_SETMASK, &old, NULL);
	return SUPERVISOR_DONE;
}
