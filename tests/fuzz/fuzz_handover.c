/* The decoders of mount hand-over: a control= request's payload
 * (fs/supervisor/control.c), the hand-over record an upgrade passes on
 * (fs/supervisor/handover.c) and the legacy table of handed-over mounts beside
 * it (fs/supervisor/handover_legacy.c). The input's first byte picks one; the
 * rest is decoded.
 * Properties, beyond never crashing:
 *  - a payload accepted has an absolute mount point and a non-empty command
 *    line, and its strings laid end to end are the payload again;
 *  - every slot of a table accepted has a session fd number, a mount point
 *    and a command line, and the table written back parses to the same;
 *  - a record accepted, encoded again, decodes to the same. */
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fs/supervisor/control.h"
#include "fs/supervisor/handover.h"
#include "fs/supervisor/mount_slot.h"

static void check_payload(char *buf, size_t len)
{
	struct join_request r = { .conn = -1, .fuse_fd = -1, .nsfd = -1 };
	size_t at;

	if (control_parse_payload(buf, len, &r) == 0) {
		assert(r.mountpoint == buf && r.mountpoint[0] == '/');
		assert(r.argv[0]);
		at = strlen(buf) + 1;
		for (int i = 0; r.argv[i]; i++) {
			assert(r.argv[i] == buf + at);
			at += strlen(r.argv[i]) + 1;
		}
		assert(at == len);
	}
	free(r.argv);
}

/* The slots written to a memfd and read back as one buffer (NULL if none). */
static char *written(struct mount_slot **slots, size_t n, size_t *len)
{
	int mfd = memfd_create("table", 0);
	char *back = NULL;
	off_t size;

	if (mfd < 0)
		return NULL;
	for (size_t i = 0; i < n; i++)
		assert(slot_table_write(mfd, slots[i]) == 0);
	size = lseek(mfd, 0, SEEK_END);
	if (size > 0 && (back = malloc((size_t)size)) &&
	    pread(mfd, back, (size_t)size, 0) != size) {
		free(back);
		back = NULL;
	}
	*len = (size_t)size;
	close(mfd);
	return back;
}

static void same_slot(const struct mount_slot *a, const struct mount_slot *b)
{
	assert(a->fd == b->fd && a->join.nsfd == b->join.nsfd && a->ready == b->ready);
	assert(a->rings_fd == b->rings_fd && a->nodes_fd == b->nodes_fd && a->conn == b->conn);
	assert(!strcmp(a->join.mountpoint, b->join.mountpoint));
	for (int i = 0; a->join.argv[i] || b->join.argv[i]; i++)
		assert(a->join.argv[i] && b->join.argv[i] && !strcmp(a->join.argv[i], b->join.argv[i]));
}

static void forget_all(struct mount_slot **slots, size_t n)
{
	for (size_t i = 0; i < n; i++)
		mount_slot_forget(slots[i]);
	free(slots);
}

static void check_table(char *buf, size_t len)
{
	struct mount_slot **slots = NULL, **again = NULL;
	size_t n = 0, m = 0, wlen = 0;
	char *back;

	if (slot_table_parse(buf, len, &slots, &n) == 0 && (back = written(slots, n, &wlen))) {
		for (size_t i = 0; i < n; i++)
			assert(slots[i]->fd >= 0 && slots[i]->join.mountpoint && slots[i]->join.argv[0]);
		assert(slot_table_parse(back, wlen, &again, &m) == 0 && m == n);
		for (size_t i = 0; i < n; i++)
			same_slot(slots[i], again[i]);
		free(back);
	}
	forget_all(slots, n);
	forget_all(again, m);
}

static void check_record(const char *buf, size_t len)
{
	struct handover h, again;
	char *back;
	size_t blen;

	if (handover_decode(buf, len, &h))
		return;
	for (size_t i = 0; i < h.nmounts; i++)
		assert(h.mounts[i]->fd >= 0 && h.mounts[i]->join.mountpoint && h.mounts[i]->join.argv[0]);
	assert(handover_encode(&h, &back, &blen) == 0);
	assert(handover_decode(back, blen, &again) == 0);
	assert(h.session_fd == again.session_fd && h.serve == again.serve &&
	       h.pidns_fd == again.pidns_fd && h.ready_fd == again.ready_fd &&
	       h.rings_fd == again.rings_fd && h.nodes_fd == again.nodes_fd &&
	       h.log_syslog == again.log_syslog && h.control_fd == again.control_fd &&
	       h.init_pending == again.init_pending && h.successor_fd == again.successor_fd &&
	       h.nmounts == again.nmounts);
	for (size_t i = 0; i < h.nmounts; i++)
		same_slot(h.mounts[i], again.mounts[i]);
	free(back);
	handover_forget(&h);
	handover_forget(&again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf;

	if (size < 1)
		return 0;
	buf = malloc(size);
	if (!buf)
		return 0;
	memcpy(buf, data + 1, size - 1);
	if (data[0] == 'R') /* a byte no seed of the others begins with */
		check_record(buf, size - 1);
	else if (data[0] & 1)
		check_table(buf, size - 1);
	else
		check_payload(buf, size - 1);
	free(buf);
	return 0;
}
