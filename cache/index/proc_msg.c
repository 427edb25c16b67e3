#include "cache/index/proc_msg.h"

#include <string.h>

#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/netlink.h>

/* Headers are copied out, never pointed into: the event sits 36 bytes into
 * its message, misaligned for its 8-byte fields, and a received buffer may
 * end anywhere. */
static void msg_from_event(const struct cn_msg *cn, const struct proc_event *ev,
			   struct proc_msg *m)
{
	m->what = ev->what;
	m->ack = cn->ack;
	m->err = 0;
	m->stamp_ns = ev->timestamp_ns;
	switch (ev->what) {
	case PROC_EVENT_NONE:
		m->err = ev->event_data.ack.err;
		m->pid = m->tgid = 0;
		break;
	case PROC_EVENT_FORK:
		m->pid = ev->event_data.fork.child_pid;
		m->tgid = ev->event_data.fork.child_tgid;
		break;
	default: /* exec, exit, uid, gid, sid, ptrace, comm, coredump: same head */
		m->pid = ev->event_data.exec.process_pid;
		m->tgid = ev->event_data.exec.process_tgid;
		break;
	}
}

int proc_msg_next(const void *buf, size_t len, size_t *off, struct proc_msg *m)
{
	const unsigned char *b = buf;

	while (*off < len && len - *off >= NLMSG_HDRLEN) {
		size_t at = *off, payload, n;
		struct nlmsghdr nh;
		struct cn_msg cn;
		struct proc_event ev;

		memcpy(&nh, b + at, sizeof(nh));
		if (nh.nlmsg_len < NLMSG_HDRLEN || nh.nlmsg_len > len - at)
			break;
		*off = len - at > NLMSG_ALIGN(nh.nlmsg_len) ? at + NLMSG_ALIGN(nh.nlmsg_len) : len;
		payload = nh.nlmsg_len - NLMSG_HDRLEN;
		if (payload < sizeof(cn))
			continue;
		memcpy(&cn, b + at + NLMSG_HDRLEN, sizeof(cn));
		if (cn.id.idx != CN_IDX_PROC || cn.id.val != CN_VAL_PROC)
			continue;
		n = payload - sizeof(cn);
		if (n > cn.len)
			n = cn.len;
		if (n > sizeof(ev))
			n = sizeof(ev);
		memset(&ev, 0, sizeof(ev));
		memcpy(&ev, b + at + NLMSG_HDRLEN + sizeof(cn), n);
		msg_from_event(&cn, &ev, m);
		return 1;
	}
	*off = len;
	return 0;
}

size_t proc_msg_request(void *buf, const void *op, size_t oplen, uint32_t ack)
{
	struct nlmsghdr *nh = buf;
	struct cn_msg *cn = NLMSG_DATA(nh);

	_Static_assert(NLMSG_SPACE(sizeof(struct cn_msg) + 8) <= PROC_MSG_REQUEST_SPACE,
		       "room for a proc_input");
	memset(buf, 0, PROC_MSG_REQUEST_SPACE);
	if (NLMSG_SPACE(sizeof(*cn) + oplen) > PROC_MSG_REQUEST_SPACE)
		return 0;
	nh->nlmsg_len = (uint32_t)NLMSG_LENGTH(sizeof(*cn) + oplen);
	nh->nlmsg_type = NLMSG_DONE;
	cn->id.idx = CN_IDX_PROC;
	cn->id.val = CN_VAL_PROC;
	cn->ack = ack;
	cn->len = (uint16_t)oplen;
	memcpy(cn->data, op, oplen);
	return nh->nlmsg_len;
}
