/* proc_msg_next (cache/index/proc_msg.c), the decoder of what the proc connector
 * sends, two ways:
 *  - the input as a received buffer: decoding ends, moves forward, and never
 *    reads outside the buffer;
 *  - the input as a list of events, each encoded as the kernel sends it
 *    (netlink header, cn_msg, struct proc_event), with messages of another
 *    connector in between: decoding gives back exactly the events. */
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/netlink.h>

#include "cache/index/proc_msg.h"

#define MSG_SPACE NLMSG_SPACE(sizeof(struct cn_msg) + sizeof(struct proc_event))
#define RECORD 9 /* selector byte, pid, tgid */

static void decode_raw(const uint8_t *data, size_t size)
{
	struct proc_msg m;
	size_t off = 0, last = 0, n = 0;

	while (proc_msg_next(data, size, &off, &m)) {
		assert(off > last && off <= size);
		last = off;
		n++;
	}
	assert(off == size);
	assert(n <= size / NLMSG_HDRLEN);
}

static const uint32_t whats[] = {
	PROC_EVENT_NONE, PROC_EVENT_FORK, PROC_EVENT_EXEC, PROC_EVENT_UID,
	PROC_EVENT_GID, PROC_EVENT_SID, PROC_EVENT_COMM, PROC_EVENT_EXIT,
};

/* One message at out as the kernel builds it; returns its space. */
static size_t encode(uint8_t *out, uint32_t idx, uint32_t what, uint32_t ack, pid_t pid, pid_t tgid)
{
	struct nlmsghdr nh = { .nlmsg_len = NLMSG_LENGTH(sizeof(struct cn_msg) + sizeof(struct proc_event)),
			       .nlmsg_type = NLMSG_DONE };
	struct cn_msg cn = { .id = { idx, CN_VAL_PROC }, .ack = ack, .len = sizeof(struct proc_event) };
	struct proc_event ev = { .what = what };

	if (what == PROC_EVENT_FORK) {
		ev.event_data.fork.parent_pid = tgid;
		ev.event_data.fork.child_pid = pid;
		ev.event_data.fork.child_tgid = tgid;
	} else if (what == PROC_EVENT_NONE) {
		ev.event_data.ack.err = (uint32_t)pid;
	} else {
		ev.event_data.exec.process_pid = pid;
		ev.event_data.exec.process_tgid = tgid;
	}
	memset(out, 0, MSG_SPACE);
	memcpy(out, &nh, sizeof(nh));
	memcpy(out + NLMSG_HDRLEN, &cn, sizeof(cn));
	memcpy(out + NLMSG_HDRLEN + sizeof(cn), &ev, sizeof(ev));
	return MSG_SPACE;
}

static void round_trip(const uint8_t *data, size_t size)
{
	size_t n = size / RECORD, len = 0, off = 0;
	uint8_t *buf = malloc(2 * n * MSG_SPACE + 1);
	struct proc_msg m;

	if (!buf)
		return;
	for (size_t i = 0; i < n; i++) {
		const uint8_t *r = data + i * RECORD;
		pid_t pid, tgid;

		memcpy(&pid, r + 1, 4);
		memcpy(&tgid, r + 5, 4);
		if (r[0] & 0x80) /* another connector's message: skipped */
			len += encode(buf + len, CN_IDX_PROC + 1, PROC_EVENT_FORK, 0, 1, 1);
		len += encode(buf + len, CN_IDX_PROC, whats[r[0] % 8], (uint32_t)i, pid, tgid);
	}
	for (size_t i = 0; i < n; i++) {
		const uint8_t *r = data + i * RECORD;
		pid_t pid, tgid;
		uint32_t what = whats[r[0] % 8];

		memcpy(&pid, r + 1, 4);
		memcpy(&tgid, r + 5, 4);
		assert(proc_msg_next(buf, len, &off, &m) == 1);
		assert(m.what == what && m.ack == (uint32_t)i);
		if (what == PROC_EVENT_NONE)
			assert(m.err == (uint32_t)pid);
		else
			assert(m.pid == pid && m.tgid == tgid);
	}
	assert(proc_msg_next(buf, len, &off, &m) == 0);
	free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	decode_raw(data, size);
	round_trip(data, size);
	return 0;
}
