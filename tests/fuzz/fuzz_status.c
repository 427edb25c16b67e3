/* status_tgid, status_groups and status_ids (fs/lib/proc_fields.c), which
 * read a caller's thread group, supplementary groups and user and group ids from
 * PID/status, two ways:
 *  - the input as the text read (truncated to the reader's buffer): never
 *    crashes, never reads past the text nor stores past max groups;
 *  - a status text built from the input (other lines with arbitrary text
 *    around a Tgid:, Uid:, Gid: and a Groups: line of ids from the input):
 *    the parser finds exactly that tgid, those fs ids and those groups. */
#include <assert.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs/lib/proc_fields.h"

#define READ_BUF 4096 /* what caller.c reads PID/status into */
#define MAX_GROUPS 8  /* small, so that the limit is reached */

static void parse_raw(const uint8_t *data, size_t size)
{
	size_t n = size < READ_BUF - 1 ? size : READ_BUF - 1;
	char *text = malloc(n + 1);
	gid_t *groups = malloc(MAX_GROUPS * sizeof(gid_t));
	struct task_ids ids;
	int ng;

	if (text && groups) {
		memcpy(text, data, n);
		text[n] = '\0';
		assert(status_tgid(text) >= 0);
		ng = status_groups(text, groups, MAX_GROUPS);
		assert(ng >= 0 && ng <= MAX_GROUPS);
		assert(status_ids(text, &ids) == 0 || status_ids(text, &ids) == -1);
	}
	free(text);
	free(groups);
}

/* A line of other text: never starts with "Tgid:", "Uid:", "Gid:" or
 * "Groups:" (no status line does) and holds no newline. */
static size_t filler(char *out, const uint8_t *data, size_t size)
{
	size_t n = 0;

	out[n++] = 'N';
	for (size_t i = 0; i < size && n < 40; i++)
		if (data[i] && data[i] != '\n')
			out[n++] = (char)data[i];
	out[n++] = '\n';
	return n;
}

static void differential(const uint8_t *data, size_t size)
{
	char text[READ_BUF];
	gid_t want[MAX_GROUPS], got[MAX_GROUPS];
	int ngroups, got_n;
	uint32_t fsuid, fsgid;
	struct task_ids ids;
	pid_t tgid;
	size_t len = 0;

	if (size < 13)
		return;
	memcpy(&tgid, data, 4);
	memcpy(&fsuid, data + 4, 4);
	memcpy(&fsgid, data + 8, 4);
	tgid &= 0x7fffffff;
	ngroups = data[12] % (MAX_GROUPS + 1);
	data += 13;
	size -= 13;
	len += filler(text + len, data, size);
	len += (size_t)sprintf(text + len, "Tgid:\t%d\n", tgid);
	len += (size_t)sprintf(text + len, "Uid:\t1\t2\t3\t%u\nGid:\t4\t5\t6\t%u\n", fsuid, fsgid);
	len += filler(text + len, data + size / 2, size - size / 2);
	len += (size_t)sprintf(text + len, "Groups:");
	for (int i = 0; i < ngroups; i++) {
		uint32_t g = (uint32_t)i;

		if ((size_t)i * 4 + 4 <= size)
			memcpy(&g, data + (size_t)i * 4, 4);
		want[i] = g;
		len += (size_t)sprintf(text + len, "%s%u", i ? " " : "\t", g);
	}
	len += (size_t)sprintf(text + len, " \n");
	len += filler(text + len, data, size);
	text[len] = '\0';
	assert(status_tgid(text) == tgid);
	assert(status_ids(text, &ids) == 0 && ids.uid[IDS_FS] == fsuid && ids.gid[IDS_FS] == fsgid);
	assert(ids.uid[IDS_REAL] == 1 && ids.uid[IDS_EFFECTIVE] == 2 && ids.uid[IDS_SAVED] == 3);
	assert(ids.gid[IDS_REAL] == 4 && ids.gid[IDS_EFFECTIVE] == 5 && ids.gid[IDS_SAVED] == 6);
	got_n = status_groups(text, got, MAX_GROUPS);
	assert(got_n == ngroups);
	assert(!memcmp(got, want, sizeof(gid_t) * (size_t)ngroups));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	parse_raw(data, size);
	differential(data, size);
	return 0;
}
