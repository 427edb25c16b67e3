#include "cache/index/proc_filter.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stddef.h>
#include <sys/socket.h>

#include <linux/connector.h>
#include <linux/filter.h>
#include <linux/netlink.h>

/* Where a connector datagram holds what the filter reads: the netlink
 * header, the connector's, then the event (proc_msg.c decodes the same). A
 * filter's absolute loads read big-endian words: constants are compared in
 * that order (htonl). */
#define EVENT_AT (NLMSG_HDRLEN + sizeof(struct cn_msg))
#define WHAT_AT (EVENT_AT + offsetof(struct proc_event, what))
#define CHILD_PID_AT (EVENT_AT + offsetof(struct proc_event, event_data.fork.child_pid))
#define CHILD_TGID_AT (EVENT_AT + offsetof(struct proc_event, event_data.fork.child_tgid))
#define LONG_ENOUGH (CHILD_TGID_AT + sizeof(__u32))

/* Jump offsets count the instructions skipped: KEEP and DROP are the last
 * two, so each jump names its distance to them from where it stands. */
enum { AT_LEN, AT_LEN_CHECK, AT_WHAT, AT_NONE, AT_WANTED, AT_FORK, AT_PID, AT_TAX, AT_TGID,
       AT_SAME, AT_KEEP, AT_DROP, PROGRAM_LEN };
#define TO(from, to) ((to) - (from) - 1)

int proc_filter_attach(int sock)
{
	struct sock_filter code[PROGRAM_LEN] = {
		[AT_LEN] = BPF_STMT(BPF_LD | BPF_W | BPF_LEN, 0),
		[AT_LEN_CHECK] = BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, LONG_ENOUGH, 0,
					  TO(AT_LEN_CHECK, AT_KEEP)),
		[AT_WHAT] = BPF_STMT(BPF_LD | BPF_W | BPF_ABS, WHAT_AT),
		[AT_NONE] = BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, htonl(PROC_EVENT_NONE),
				     TO(AT_NONE, AT_KEEP), 0),
		[AT_WANTED] = BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, htonl(PROC_EVENTS_WANTED), 0,
				       TO(AT_WANTED, AT_DROP)),
		[AT_FORK] = BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, htonl(PROC_EVENT_FORK), 0,
				     TO(AT_FORK, AT_KEEP)),
		[AT_PID] = BPF_STMT(BPF_LD | BPF_W | BPF_ABS, CHILD_PID_AT),
		[AT_TAX] = BPF_STMT(BPF_MISC | BPF_TAX, 0),
		[AT_TGID] = BPF_STMT(BPF_LD | BPF_W | BPF_ABS, CHILD_TGID_AT),
		[AT_SAME] = BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_X, 0, TO(AT_SAME, AT_KEEP),
				     TO(AT_SAME, AT_DROP)),
		[AT_KEEP] = BPF_STMT(BPF_RET | BPF_K, 0xffffffff),
		[AT_DROP] = BPF_STMT(BPF_RET | BPF_K, 0),
	};
	struct sock_fprog prog = { .len = PROGRAM_LEN, .filter = code };

	return setsockopt(sock, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog)) ? -errno : 0;
}
