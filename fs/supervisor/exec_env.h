/* What a procfast process hands to the procfast it executes (an upgrade, a
 * server of a handed-over mount): open fds named in the environment. */
#ifndef PROCFAST_EXEC_ENV_H
#define PROCFAST_EXEC_ENV_H

#include <stddef.h>

#define RESUME_ENV "PROCFAST_RESUME_FD"     /* the session fd to serve or supervise */
#define SERVE_ENV "PROCFAST_SERVE"          /* serve only: "first" or "resumed" */
#define PIDNS_FD_ENV "PROCFAST_PIDNS_FD"    /* pidns= as an open file */
#define READY_FD_ENV "PROCFAST_READY_FD"    /* where to say INIT was answered */
#define RINGS_FD_ENV "PROCFAST_RINGS_FD"    /* the memfd of the mount's ring buffers */
#define LOG_ENV "PROCFAST_LOG"              /* "syslog" when the supervisor logs there */
#define JOINED_FD_ENV "PROCFAST_JOINED_FD"  /* upgrade: the handed-over mounts (mount_slot.c) */
#define JOINED_RINGS_ENV "PROCFAST_JOINED_RINGS" /* upgrade: their ring buffers' fds */
#define JOINED_CONNS_ENV "PROCFAST_JOINED_CONNS" /* upgrade: their fusectl numbers */
#define CONTROL_FD_ENV "PROCFAST_CONTROL_FD" /* upgrade: the control= socket */
#define NODES_FD_ENV "PROCFAST_NODES_FD"    /* the memfd of the mount's node record (cache/nodes/node_record.h) */
#define JOINED_NODES_ENV "PROCFAST_JOINED_NODES" /* upgrade: the handed-over mounts' node records */
#define INIT_PENDING_ENV "PROCFAST_INIT_PENDING" /* upgrade: the own mount's INIT is not answered yet */
#define SUCCESSOR_FD_ENV "PROCFAST_SUCCESSOR_FD" /* upgrade: a takeover's successor (takeover.h) */

/* Leaves fd open across execve, named in the environment as name. 0, or -1
 * with errno. */
int exec_env_pass_fd(const char *name, int fd);

/* The fd named so (close-on-exec again), or -1; the name is removed. */
int exec_env_take_fd(const char *name);

/* Our binary's path, as an upgrade left it ("(deleted)" taken off). */
int self_exe(char *buf, size_t len);

#endif
