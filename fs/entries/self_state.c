/* A task reading its own stat, status or wchan through the mount.
 *
 * procfs shows such a reader running: it is the task on the CPU. Through
 * FUSE the reader is asleep in the request the daemon answers, so procfs,
 * asked by the daemon, shows it sleeping (S), with a wait channel
 * (request_wait_answer). Those fields are given as procfs gives them to the
 * task itself: R, wchan 0. What cannot be given back: each request the
 * reader makes is one voluntary context switch more in its status.
 */
#include "fs/entries/content.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fs/entries/name_class.h"

/* Only for the task the file shows. */
static int self_opened(const struct node *n, pid_t opener, struct content_state *st)
{
	(void)opener, (void)st;
	return n->owner.pid != 0;
}

static int self_applies(const struct node *n, const struct content_state *st, pid_t reader_tid)
{
	(void)st;
	return reader_tid > 0 && n->owner.pid && n->owner.daemon_pid == reader_tid;
}

static int asleep(char state)
{
	return state == 'S' || state == 'D';
}

/* stat: "pid (comm) S ppid ...": the state after the last ')' (comm may
 * hold any character), the wait channel 32 fields on. */
static size_t fix_stat(char *buf, size_t len)
{
	char *p = memrchr(buf, ')', len), *end = buf + len;

	if (!p || p + 3 >= end || p[1] != ' ')
		return len;
	p += 2;
	if (!asleep(*p))
		return len;
	*p = 'R';
	for (int field = 3; field < 35 && p < end; field++) {
		p = memchr(p, ' ', (size_t)(end - p));
		if (!p)
			return len;
		p++;
	}
	if (p + 1 < end && p[0] == '1' && (p[1] == ' ' || p[1] == '\n'))
		p[0] = '0';
	return len;
}

/* status: "State:\tS (sleeping)" becomes "State:\tR (running)", one byte
 * shorter. */
static size_t fix_status(char *buf, size_t len)
{
	static const char key[] = "\nState:\t", running[] = "R (running)";
	char *line = memmem(buf, len, key, sizeof(key) - 1), *v, *eol;

	if (!line || !asleep(line[sizeof(key) - 1]))
		return len;
	v = line + sizeof(key) - 1;
	eol = memchr(v, '\n', len - (size_t)(v - buf));
	if (!eol || (size_t)(eol - v) < sizeof(running) - 1)
		return len;
	memcpy(v, running, sizeof(running) - 1);
	memmove(v + sizeof(running) - 1, eol, len - (size_t)(eol - buf));
	return len - (size_t)(eol - v) + sizeof(running) - 1;
}

static size_t fix(const struct node *n, char *text, size_t len)
{
	switch ((enum self_state)n->cls->content_arg) {
	case SELF_STAT:
		return fix_stat(text, len);
	case SELF_STATUS:
		return fix_status(text, len);
	case SELF_WCHAN: /* a running task has none */
		if (len) {
			text[0] = '0';
			return 1;
		}
		return len;
	case SELF_NONE:
		break;
	}
	return len;
}

/* Given as procfs gives it to the task itself, in place. */
static int self_make(const struct node *n, const struct content_state *st, char *src, size_t len,
		     char **text, size_t *text_len)
{
	(void)st;
	*text = src;
	*text_len = fix(n, src, len);
	return 1;
}

const struct content_ops self_state_content = {
	.name = "self state",
	.first_read = 4096,
	.opened = self_opened,
	.applies = self_applies,
	.make = self_make,
};
