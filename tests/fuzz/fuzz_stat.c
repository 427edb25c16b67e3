/* stat_parse (fs/lib/proc_fields.c), which finds a task's state and start
 * time in PID/stat, two ways:
 *  - the input as the text read (truncated to the reader's buffer): never
 *    crashes, never reads past the text;
 *  - a stat line built around a command taken from the input (any bytes
 *    but NUL: spaces, parentheses, newlines, digits) with a state and start
 *    time taken from the input too: the parser finds exactly those. */
#include <assert.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs/lib/proc_fields.h"

#define READ_BUF 1024 /* what pidgen.c reads PID/stat into */
#define COMM_MAX 64   /* kernel threads' names are longer than TASK_COMM_LEN */

static void parse_raw(const uint8_t *data, size_t size)
{
	size_t n = size < READ_BUF - 1 ? size : READ_BUF - 1;
	char *text = malloc(n + 1);
	uint64_t start = 0;
	int exited;

	if (!text)
		return;
	memcpy(text, data, n);
	text[n] = '\0';
	if (stat_parse(text, &exited, &start) == 0)
		assert(exited == 0 || exited == 1);
	{
		unsigned long long flags;

		stat_number(text, 9, &flags);
	}
	free(text);
}

static void differential(const uint8_t *data, size_t size)
{
	static const char states[] = "RSDZTtXxIKWP";
	char comm[COMM_MAX + 1], line[READ_BUF];
	uint64_t want, start = 0;
	unsigned long long flags;
	size_t n = 0;
	char state;
	int exited, len;

	if (size < 9)
		return;
	state = states[data[0] % (sizeof(states) - 1)];
	memcpy(&want, data + 1, 8);
	for (size_t i = 9; i < size && n < COMM_MAX; i++)
		if (data[i])
			comm[n++] = (char)data[i];
	comm[n] = '\0';
	/* Fields 4 to 21, the start time, then the rest as a kernel writes them. */
	len = snprintf(line, sizeof(line),
		       "%d (%s) %c 1 %d %d 0 -1 4194560 %u 0 0 0 %u %u 0 0 20 0 1 0 %" PRIu64
		       " 12345678 456 18446744073709551615 1 1 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n",
		       (int)(want & 0x3fffff), comm, state, (int)(want >> 40), (int)(want >> 48),
		       (unsigned)(want >> 3), (unsigned)(want >> 7), (unsigned)(want >> 13), want);
	assert(len > 0 && len < (int)sizeof(line));
	assert(stat_parse(line, &exited, &start) == 0);
	assert(start == want);
	assert(exited == (state == 'Z' || state == 'X'));
	/* field 9, the flags (pidgen_exiting), and field 4, the parent */
	assert(stat_number(line, 9, &flags) == 0 && flags == 4194560);
	assert(stat_number(line, 4, &flags) == 0 && flags == 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	parse_raw(data, size);
	differential(data, size);
	return 0;
}
