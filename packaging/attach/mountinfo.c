/* mountinfo lines: "ID PARENT MAJ:MIN ROOT MOUNT_POINT OPTIONS [OPTIONAL...] -
 * FSTYPE SOURCE SUPER_OPTIONS". The kernel escapes space, tab, newline and
 * backslash in paths as \ooo (octal). */
#include "packaging/attach/mountinfo.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs/lib/cleanup.h"

/* The whole file, NUL-terminated; NULL with errno on failure. */
static char *read_all(const char *path)
{
	__do_close int fd = open(path, O_RDONLY | O_CLOEXEC);
	__do_free char *buf = NULL;
	size_t len = 0, size = 0;
	ssize_t n;

	if (fd < 0)
		return NULL;
	do {
		if (size - len < 4096) {
			char *more = realloc(buf, size += 16384);

			if (!more)
				return NULL;
			buf = more;
		}
		n = read(fd, buf + len, size - len - 1);
		if (n < 0)
			return NULL;
		len += n;
	} while (n > 0);
	buf[len] = '\0';
	char *whole = buf;

	buf = NULL; /* handed to the caller */
	return whole;
}

/* Undoes the kernel's \ooo escapes in place. */
static void unescape(char *s)
{
	char *out = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*out++ = (char)((s[1] - '0') << 6 | (s[2] - '0') << 3 | (s[3] - '0'));
			s += 3;
		} else {
			*out++ = *s;
		}
	}
	*out = '\0';
}

/* Splits one line into e; -EINVAL if it is not a mountinfo line. */
static int parse_line(char *line, struct mount_entry *e)
{
	char *field[6], *save = NULL, *tok;
	int n = 0;

	for (tok = strtok_r(line, " ", &save); tok && n < 6; tok = strtok_r(NULL, " ", &save))
		field[n++] = tok;
	if (n < 6 || sscanf(field[2], "%u:%u", &e->major, &e->minor) != 2)
		return -EINVAL;
	/* optional fields (shared:N, master:N, ...) end at "-" */
	e->shared = 0;
	while (tok && strcmp(tok, "-")) {
		e->shared |= !strncmp(tok, "shared:", 7);
		tok = strtok_r(NULL, " ", &save);
	}
	e->fstype = tok ? strtok_r(NULL, " ", &save) : NULL;
	if (!e->fstype)
		return -EINVAL;
	unescape(field[4]);
	e->mount_point = field[4];
	return 0;
}

int mountinfo_each(const char *path, int (*fn)(const struct mount_entry *e, void *arg),
		   void *arg)
{
	__do_free char *buf = read_all(path);
	char *save = NULL;
	struct mount_entry e;
	int r;

	if (!buf)
		return -errno;
	for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (parse_line(line, &e))
			return -EINVAL;
		r = fn(&e, arg);
		if (r)
			return r;
	}
	return 0;
}
