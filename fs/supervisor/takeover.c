/* The record, on a SOCK_SEQPACKET connection to the control= socket: one
 * message, its fds as SCM_RIGHTS and as payload lines
 *
 *	procfast-takeover 1
 *	final 0|1
 *	fds N...           the sender's numbers of the attached fds, in order
 *	env NAME VALUE     one per variable an upgrade sets (handover_passed_env:
 *	                   the hand-over record's memfd, and the legacy variables)
 *	servers PID...     its servers, for the successor to stop if the old
 *	                   daemon dies without stopping them
 *
 * then, after a NUL, the hand-over record's bytes (handover.h), which the
 * successor puts in a memfd of its own: sending the record's memfd would
 * add an fd, and a successor of the release before (156725c) puts its own
 * signalfd at the number after the fds it received, where one more fd can
 * make it one the record's fds go to. That release reads the text up to
 * the NUL and at most MAX_RECORD bytes: a record that does not fit is left
 * out, and the successor reads the legacy variables beside it.
 *
 * A reader skips lines it does not know and takes only the variables it
 * knows, so that either version reads the other's record; what the
 * variables name is readable both ways (handover.h). */
#include "fs/supervisor/takeover.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <syslog.h>
#include <unistd.h>

#include "fs/lib/cleanup.h"
#include "fs/lib/log.h"
#include "fs/supervisor/exec_env.h"
#include "fs/supervisor/handover.h"
#include "fs/supervisor/pidfile.h"

#include <fuse_lowlevel.h>

#define MAX_RECORD 4096  /* what a successor of the release before reads */
#define MAX_RECEIVED (64 * 1024)
#define MAX_FDS 250 /* SCM_MAX_FD is 253 */
#define FIRST_RECORD_MS 10000
#define FINAL_WORD_MS 10000
#define MAX_SERVERS 64
#define SERVER_STOP_MS 5000

/* What an upgrade passes on, and so what a successor takes on. */
#define NPASSED 16 /* at least the names in handover_passed_env */

/* The last record received. */
struct record {
	int fds[MAX_FDS];      /* ours */
	int targets[MAX_FDS];  /* the sender's numbers */
	size_t nfds;
	char *env[NPASSED];    /* values, or NULL */
	pid_t servers[MAX_SERVERS];
	size_t nservers;
	char *handover;        /* the hand-over record, or NULL */
	size_t handover_len;
	int final;
	int valid;
};
static struct record got;

static void forget_record(void)
{
	for (size_t i = 0; i < got.nfds; i++)
		close(got.fds[i]);
	for (size_t i = 0; i < NPASSED; i++) {
		free(got.env[i]);
		got.env[i] = NULL;
	}
	free(got.handover);
	got.handover = NULL;
	got.nfds = got.nservers = got.handover_len = 0;
	got.final = got.valid = 0;
}

/* ---- the old daemon's side ---- */

/* The fds are the caller's to name: the record's and its memfds'. */
static size_t record_text(char *buf, size_t len, int final, const int *fds, size_t nfds,
			  const pid_t *servers, size_t nservers)
{
	size_t at = (size_t)snprintf(buf, len, "%s\nfinal %d\nfds", TAKEOVER_HELLO, final);

	for (size_t i = 0; i < nfds && at < len; i++)
		at += (size_t)snprintf(buf + at, len - at, " %d", fds[i]);
	for (size_t i = 0; handover_passed_env[i] && at < len; i++) {
		const char *v = getenv(handover_passed_env[i]);

		if (v)
			at += (size_t)snprintf(buf + at, len - at, "\nenv %s %s", handover_passed_env[i], v);
	}
	if (at < len)
		at += (size_t)snprintf(buf + at, len - at, "\nservers");
	for (size_t i = 0; i < nservers && at < len; i++)
		at += (size_t)snprintf(buf + at, len - at, " %d", (int)servers[i]);
	return at < len ? at + 1 : 0;
}

static int send_record(int conn, const char *text, size_t len, const int *fds, size_t nfds)
{
	union {
		char space[CMSG_SPACE(MAX_FDS * sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { .iov_base = (void *)text, .iov_len = len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *c;

	if (nfds) {
		mh.msg_control = ctl.space;
		mh.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(nfds * sizeof(int));
		memcpy(CMSG_DATA(c), fds, nfds * sizeof(int));
	}
	return sendmsg(conn, &mh, MSG_NOSIGNAL) < 0 ? -errno : 0;
}

static int final_word(int conn)
{
	struct pollfd p = { .fd = conn, .events = POLLIN };
	char word;

	if (poll(&p, 1, FINAL_WORD_MS) != 1)
		return -ETIMEDOUT;
	return recv(conn, &word, 1, 0) == 1 && word == 'y' ? 0 : -ECONNRESET;
}

int takeover_send(int conn, int final, const int *extra, size_t nextra, const pid_t *servers,
		  size_t nservers, const char *record, size_t record_len)
{
	int fds[MAX_FDS];
	char text[MAX_RECORD];
	size_t nfds = 0, len;
	int r;

	for (size_t i = 0; i < nextra; i++) {
		int dup = 0;

		for (size_t j = 0; j < nfds; j++)
			dup |= fds[j] == extra[i];
		if (extra[i] >= 3 && !dup) {
			if (nfds == MAX_FDS)
				return -E2BIG;
			fds[nfds++] = extra[i];
		}
	}
	if (!(len = record_text(text, sizeof(text), final, fds, nfds, servers, nservers)))
		return -E2BIG;
	if (len + record_len <= sizeof(text)) { /* after the text's NUL */
		memcpy(text + len, record, record_len);
		len += record_len;
	}
	if ((r = send_record(conn, text, len, fds, nfds)))
		return r;
	return final ? final_word(conn) : 0;
}

/* ---- the successor's side ---- */

static int connect_to(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	__do_close int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
		return -errno;
	return move_fd(&fd);
}

static void take_received_fds(struct msghdr *mh)
{
	for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
		size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		int *fds = (int *)CMSG_DATA(c);

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		for (size_t i = 0; i < n; i++) {
			if (got.nfds < MAX_FDS)
				got.fds[got.nfds++] = fds[i];
			else
				close(fds[i]);
		}
	}
}

static int parse_targets(char *list)
{
	size_t n = 0;
	char *end;

	for (long fd; *list; list = end) {
		fd = strtol(list, &end, 10);
		if (end == list)
			break;
		if (fd < 3 || fd > 1 << 20 || n == got.nfds)
			return -EINVAL;
		got.targets[n++] = (int)fd;
	}
	return n == got.nfds ? 0 : -EINVAL;
}

static void parse_servers(char *list)
{
	char *end;

	for (long pid; *list && got.nservers < MAX_SERVERS; list = end) {
		pid = strtol(list, &end, 10);
		if (end == list)
			break;
		if (pid > 1)
			got.servers[got.nservers++] = (pid_t)pid;
	}
}

static int parse_env(const char *name, const char *value)
{
	for (size_t i = 0; i < NPASSED && handover_passed_env[i]; i++)
		if (!strcmp(name, handover_passed_env[i]))
			return (got.env[i] = strdup(value)) ? 0 : -ENOMEM;
	return 0; /* a newer daemon's: not ours to take */
}

static int parse_record(char *text)
{
	char *save = NULL, *line = strtok_r(text, "\n", &save);
	int r = 0;

	if (!line || strcmp(line, TAKEOVER_HELLO))
		return -EPROTO;
	while (!r && (line = strtok_r(NULL, "\n", &save))) {
		char *sp = strchr(line, ' ');

		if (!strncmp(line, "final ", 6))
			got.final = atoi(line + 6) == 1;
		else if (!strncmp(line, "fds", 3) && (line[3] == ' ' || !line[3]))
			r = parse_targets(line + 3);
		else if (!strncmp(line, "servers", 7))
			parse_servers(line + 7);
		else if (!strncmp(line, "env ", 4) && (sp = strchr(line + 4, ' '))) {
			*sp = '\0';
			r = parse_env(line + 4, sp + 1);
		}
	}
	return r;
}

/* One record in place of the last; 0, -ECONNRESET at the sender's end. */
static int receive_record(int conn)
{
	static char text[MAX_RECEIVED + 1];
	union {
		char space[CMSG_SPACE(MAX_FDS * sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { .iov_base = text, .iov_len = MAX_RECEIVED };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.space,
			     .msg_controllen = sizeof(ctl.space) };
	ssize_t n = recvmsg(conn, &mh, MSG_CMSG_CLOEXEC);
	static struct record last, swap; /* large: not on the stack */
	int r;

	if (n <= 0)
		return n == 0 ? -ECONNRESET : -errno;
	/* a record that cannot be read leaves the last good one in force */
	last = got;
	got = (struct record){ 0 };
	take_received_fds(&mh);
	text[n] = '\0';
	if (!(mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) && strlen(text) + 1 < (size_t)n &&
	    (got.handover = malloc((size_t)n - strlen(text) - 1))) {
		got.handover_len = (size_t)n - strlen(text) - 1;
		memcpy(got.handover, text + strlen(text) + 1, got.handover_len);
	}
	if ((mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) || (r = parse_record(text))) {
		forget_record();
		got = last;
		return -EPROTO;
	}
	got.valid = 1;
	swap = got;
	got = last;
	forget_record();
	got = swap;
	return 0;
}

int takeover_register(const char *path)
{
	__do_close int conn = connect_to(path);
	struct pollfd p;
	int r;

	if (conn < 0)
		return conn;
	if (send(conn, TAKEOVER_HELLO, sizeof(TAKEOVER_HELLO), MSG_NOSIGNAL) < 0)
		return -errno;
	p = (struct pollfd){ .fd = conn, .events = POLLIN };
	if ((r = poll(&p, 1, FIRST_RECORD_MS)) <= 0)
		return r ? -errno : -ETIMEDOUT;
	/* refused (another successor waits already): one int, as control.c answers */
	if ((r = receive_record(conn)))
		return r;
	return move_fd(&conn);
}

/* Puts each received fd at the number the sender gave it: first all out of
 * the way, above every target, then each to its place (left open across the
 * execve to come). */
static int place_fds(void)
{
	int top = 3;

	for (size_t i = 0; i < got.nfds; i++)
		if (got.targets[i] >= top)
			top = got.targets[i] + 1;
	for (size_t i = 0; i < got.nfds; i++) {
		int high = fcntl(got.fds[i], F_DUPFD_CLOEXEC, top);

		if (high < 0)
			return -errno;
		close(got.fds[i]);
		got.fds[i] = high;
	}
	for (size_t i = 0; i < got.nfds; i++) {
		if (dup2(got.fds[i], got.targets[i]) < 0)
			return -errno;
		close(got.fds[i]);
		got.fds[i] = -1;
	}
	got.nfds = 0;
	return 0;
}

static int apply_record(void)
{
	int r;

	for (size_t i = 0; i < NPASSED && handover_passed_env[i]; i++)
		if (got.env[i] && setenv(handover_passed_env[i], got.env[i], 1))
			return -errno;
	/* nothing of ours may sit where the record's fds go */
	closelog();
	if ((r = place_fds()))
		return r;
	/* without it (or its memfd) the legacy variables beside it are read */
	if (got.handover && handover_put_record(got.handover, got.handover_len))
		log_warn("takeover: the hand-over record: reading the variables beside it");
	return 0;
}

/* SIGTERM and SIGINT, blocked from registration to the hand-over: a
 * successor that reported ready hears a stop instead of dying of it. */
static sigset_t stop_set(void)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	return set;
}

/* A server of the old daemon, if pid still names one. */
static int open_server(pid_t pid)
{
	char path[64], comm[32] = "";
	__do_close int fd = -1;
	int pfd = (int)syscall(SYS_pidfd_open, pid, 0);
	ssize_t n;

	if (pfd < 0)
		return -1;
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	n = fd >= 0 ? read(fd, comm, sizeof(comm) - 1) : -1;
	if (n <= 0 || strncmp(comm, "procfast", 8)) {
		close(pfd);
		return -1;
	}
	return pfd;
}

/* The old daemon died without stopping its servers, which still serve with
 * what they know: stopped as it would have stopped them (they finish the
 * requests they hold), killed if they do not go. */
static void stop_old_servers(void)
{
	for (size_t i = 0; i < got.nservers; i++) {
		__do_close int pfd = open_server(got.servers[i]);
		struct pollfd p = { .fd = pfd, .events = POLLIN };

		if (pfd < 0)
			continue;
		syscall(SYS_pidfd_send_signal, pfd, SIGTERM, NULL, 0);
		if (poll(&p, 1, SERVER_STOP_MS) != 1)
			syscall(SYS_pidfd_send_signal, pfd, SIGKILL, NULL, 0);
	}
}

int takeover_wait(int conn)
{
	sigset_t set = stop_set();
	__do_close int sfd = -1;
	int r = 0;

	sigprocmask(SIG_BLOCK, &set, NULL);
	sfd = signalfd(-1, &set, SFD_CLOEXEC);

	while (!got.final) {
		struct pollfd p[2] = { { .fd = conn, .events = POLLIN }, { .fd = sfd, .events = POLLIN } };

		if (poll(p, 2, -1) < 0)
			continue;
		if (p[1].revents) {
			close(conn);
			forget_record();
			return 1;
		}
		if ((r = receive_record(conn)) == -ECONNRESET)
			break; /* the old daemon is gone: its last record is the one */
		if (r)
			log_warn("takeover: a record that cannot be read: %s", strerror(-r));
	}
	if (got.final && send(conn, "y", 1, MSG_NOSIGNAL) != 1)
		log_warn("takeover: cannot answer the old daemon: %s", strerror(errno));
	close(conn);
	/* the binary executed next sets its own; the mask would be inherited */
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	/* closed now: its number may be one the record's fds are put at */
	close(move_fd(&sfd));
	if (!got.valid)
		return -ECONNRESET;
	log_info("taking over the mounts of the daemon before (%s)",
		 got.final ? "handed over" : "it ended");
	if (!got.final)
		stop_old_servers();
	return apply_record();
}

int takeover_succeed(const char *control, int foreground, const char *pidfile, char **argv)
{
	char exe[4096];
	sigset_t set = stop_set();
	int conn, r;

	sigprocmask(SIG_BLOCK, &set, NULL);
	conn = takeover_register(control);
	if (conn == -ENOENT || conn == -ECONNREFUSED) {
		sigprocmask(SIG_UNBLOCK, &set, NULL); /* a stop meanwhile ends us, as before */
		return 0;
	}
	if (conn < 0) {
		fprintf(stderr, "procfast: takeover at %s: %s\n", control,
			conn == -EPROTO ? "refused (another successor waits there?)" : strerror(-conn));
		return -1;
	}
	if (fuse_daemonize(foreground))
		return -1;
	if (!foreground)
		log_to_syslog();
	if (pidfile_write(pidfile))
		return -1;
	log_info("successor of the daemon at %s: waiting to take its mounts over", control);
	if ((r = takeover_wait(conn)) == 1) {
		log_info("stopped before taking over: the daemon before goes on");
		return 1;
	}
	if (r == 0 && (r = self_exe(exe, sizeof(exe))) == 0) {
		execv(exe, argv);
		r = -errno;
	}
	/* the fds this process holds keep the mounts until it exits */
	log_err("cannot take over: %s", strerror(-r));
	return -1;
}
