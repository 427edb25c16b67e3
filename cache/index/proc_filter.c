#include "cache/index/proc_filter.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <linux/connector.h>
#include <linux/filter.h>
#include <linux/netlink.h>

#include "cache/index/proc_msg.h"

/* Where a connector datagram holds what the filters read: the netlink
 * header, the connector's, then the event (proc_msg.c decodes the same). A
 * filter's absolute loads read big-endian words: constants are compared in
 * that order (htonl). A FORK names its child; EXIT, UID and GID the process
 * first, in the same place. */
#define EVENT_AT (NLMSG_HDRLEN + sizeof(struct cn_msg))
#define WHAT_AT (EVENT_AT + offsetof(struct proc_event, what))
#define CHILD_PID_AT (EVENT_AT + offsetof(struct proc_event, event_data.fork.child_pid))
#define CHILD_TGID_AT (EVENT_AT + offsetof(struct proc_event, event_data.fork.child_tgid))
#define PROCESS_PID_AT (EVENT_AT + offsetof(struct proc_event, event_data.exit.process_pid))
#define PROCESS_TGID_AT (EVENT_AT + offsetof(struct proc_event, event_data.exit.process_tgid))
#define LONG_ENOUGH (CHILD_TGID_AT + sizeof(__u32))
_Static_assert(offsetof(struct proc_event, event_data.id.process_pid) ==
			       offsetof(struct proc_event, event_data.exit.process_pid) &&
		       offsetof(struct proc_event, event_data.id.process_tgid) ==
			       offsetof(struct proc_event, event_data.exit.process_tgid),
	       "EXIT, UID and GID name their process in the same place");

/* A program is written with its jumps to the two returns, KEEP and DROP,
 * named; finish() appends them and turns the names into distances. Other
 * jump offsets are the instructions skipped, as in any classic program. */
#define KEEP 0xff
#define DROP 0xfe
#define PROGRAM_MAX 24

struct program {
	struct sock_filter code[PROGRAM_MAX];
	unsigned short len;
};

static void put(struct program *p, uint16_t code, uint32_t k, uint8_t jt, uint8_t jf)
{
	p->code[p->len++] = (struct sock_filter){ code, jt, jf, k };
}

static uint8_t distance(uint8_t to, unsigned from, unsigned keep_at)
{
	if (to == KEEP)
		return (uint8_t)(keep_at - from - 1);
	if (to == DROP)
		return (uint8_t)(keep_at + 1 - from - 1);
	return to;
}

static void finish(struct program *p)
{
	unsigned keep_at = p->len;

	for (unsigned i = 0; i < keep_at; i++)
		if (BPF_CLASS(p->code[i].code) == BPF_JMP) {
			p->code[i].jt = distance(p->code[i].jt, i, keep_at);
			p->code[i].jf = distance(p->code[i].jf, i, keep_at);
		}
	put(p, BPF_RET | BPF_K, 0xffffffff, 0, 0);
	put(p, BPF_RET | BPF_K, 0, 0, 0);
}

/* Keeps a datagram too short to tell and the answers to requests; drops
 * the events outside types. */
static void head(struct program *p, uint32_t types)
{
	put(p, BPF_LD | BPF_W | BPF_LEN, 0, 0, 0);
	put(p, BPF_JMP | BPF_JGE | BPF_K, LONG_ENOUGH, 0, KEEP);
	put(p, BPF_LD | BPF_W | BPF_ABS, WHAT_AT, 0, 0);
	put(p, BPF_JMP | BPF_JEQ | BPF_K, htonl(PROC_EVENT_NONE), KEEP, 0);
	put(p, BPF_JMP | BPF_JSET | BPF_K, htonl(types), 0, DROP);
}

/* Ends the program: a leader's event (pid == tgid) goes to if_leader, a
 * thread's to the other return. Four instructions. */
#define TAIL_LEN 4
static void tail(struct program *p, uint32_t pid_at, uint32_t tgid_at, uint8_t if_leader)
{
	put(p, BPF_LD | BPF_W | BPF_ABS, pid_at, 0, 0);
	put(p, BPF_MISC | BPF_TAX, 0, 0, 0);
	put(p, BPF_LD | BPF_W | BPF_ABS, tgid_at, 0, 0);
	put(p, BPF_JMP | BPF_JEQ | BPF_X, 0, if_leader, if_leader == KEEP ? DROP : KEEP);
}

static void write_program(struct program *p, enum proc_filter_side side)
{
	p->len = 0;
	switch (side) {
	case PROC_FILTER_ALL: /* every wanted event, and of the forks a process's */
		head(p, PROC_EVENTS_WANTED);
		put(p, BPF_JMP | BPF_JEQ | BPF_K, htonl(PROC_EVENT_FORK), 0, KEEP);
		tail(p, CHILD_PID_AT, CHILD_TGID_AT, KEEP);
		break;
	case PROC_FILTER_PROCESSES: /* forks of processes, execs, leaders' others */
		head(p, PROC_EVENTS_WANTED);
		put(p, BPF_JMP | BPF_JEQ | BPF_K, htonl(PROC_EVENT_FORK), 0, TAIL_LEN);
		tail(p, CHILD_PID_AT, CHILD_TGID_AT, KEEP);
		put(p, BPF_JMP | BPF_JEQ | BPF_K, htonl(PROC_EVENT_EXEC), KEEP, 0);
		tail(p, PROCESS_PID_AT, PROCESS_TGID_AT, KEEP);
		break;
	case PROC_FILTER_THREADS: /* threads' exits and id changes */
		head(p, PROC_EVENTS_OF_THREADS);
		tail(p, PROCESS_PID_AT, PROCESS_TGID_AT, DROP);
		break;
	}
	finish(p);
}

int proc_filter_attach(int sock, enum proc_filter_side side)
{
	struct program p;
	struct sock_fprog prog;

	write_program(&p, side);
	prog = (struct sock_fprog){ .len = p.len, .filter = p.code };
	return setsockopt(sock, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog)) ? -errno : 0;
}

int proc_filter_side_has(enum proc_filter_side side, const struct proc_msg *m)
{
	int of_thread = (m->what & PROC_EVENTS_OF_THREADS) && m->pid != m->tgid;

	switch (side) {
	case PROC_FILTER_PROCESSES:
		return !of_thread;
	case PROC_FILTER_THREADS:
		return of_thread;
	default:
		return 1;
	}
}
