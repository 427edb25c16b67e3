/* Starting the server of a handed-over mount (slot_server.h). */
#include "fs/supervisor/slot_server.h"

#include <errno.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>

#include "fs/lib/log.h"
#include "fs/supervisor/exec_env.h"
#include "fs/supervisor/handover.h"
#include "fs/transport/uring_slots.h"

static void exec_server(struct mount_slot *s, int ready_wr, const sigset_t *old)
{
	struct handover h;
	struct handover_pass pass;
	char exe[PATH_MAX];

	sigprocmask(SIG_SETMASK, old, NULL);
	handover_init(&h);
	h.session_fd = s->fd;
	h.serve = s->ready ? HANDOVER_SERVE_RESUMED : HANDOVER_SERVE_FIRST;
	h.pidns_fd = s->join.nsfd;
	h.rings_fd = s->rings_fd;
	h.nodes_fd = s->nodes_fd;
	h.ready_fd = ready_wr;
	h.log_syslog = log_uses_syslog();
	if (self_exe(exe, sizeof(exe)) || handover_pass_on(&h, &pass))
		_exit(127);
	execv(exe, s->join.argv);
	log_err("cannot execute %s: %s", exe, strerror(errno));
	_exit(127);
}

pid_t slot_server_start(struct mount_slot *s, const sigset_t *old)
{
	int ready_wr = -1;
	pid_t pid;

	/* Held here for the life of the mount, so that a server after a dead
	 * one maps what the kernel wrote for that one (uring_slots.h). Without
	 * it (no memory) the server has buffers of its own. */
	if (s->rings_fd < 0 && (s->rings_fd = uring_slots_memfd()) < 0)
		log_warn("ring buffers for %s: %s", s->join.mountpoint, strerror(errno));
	mount_slot_hold_nodes(s);
	pid = mount_slot_fork(s, &ready_wr);

	if (pid == 0)
		exec_server(s, ready_wr, old);
	return pid;
}
