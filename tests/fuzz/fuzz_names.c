/* How the daemon classifies a name from its text (fs/lib/proc_names.c), and the
 * link text hints kept per caller thread (cache/nodes/link_hints.c). The input is one
 * name (up to its first NUL). Properties, beyond never crashing:
 *  - a name taken as a pid or fd prints back as the same string, and a
 *    name is taken as one exactly when procfs's name_to_int would;
 *  - "self" and "thread-self" only are caller links;
 *  - a one-object link text is a link text;
 *  - a thread path splits into parts that rebuild the same path;
 *  - a link hint put for a text is found for that thread, directory and
 *    text, and not for another directory. */
#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/nodes/link_hints.h"
#include "fs/lib/proc_names.h"

/* procfs's reading of a number (name_to_int), spelled out independently:
 * digits only, no leading zero, and below the kernel's cut-off. */
static long long kernel_number(const char *s)
{
	size_t len = strlen(s);
	unsigned long long n = 0;

	if (!len || (len > 1 && s[0] == '0'))
		return -1;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9' || n >= (~0U - 9) / 10)
			return -1;
		n = n * 10 + (unsigned)(s[i] - '0');
	}
	return (long long)n;
}

static void check_numbers(const char *name)
{
	char back[32];
	long long k = kernel_number(name);
	pid_t pid = name_pid(name);
	int fd = name_fd(name);

	if (pid) {
		snprintf(back, sizeof(back), "%d", pid);
		assert(pid > 0 && !strcmp(back, name));
	}
	if (fd >= 0) {
		snprintf(back, sizeof(back), "%d", fd);
		assert(!strcmp(back, name));
	} else {
		assert(fd == -1);
	}
	/* Pids procfs would find (at most INT_MAX, not 0) are taken, no other name. */
	assert(pid == (k > 0 && k <= INT_MAX ? k : 0));
	assert(fd == (k >= 0 && k <= INT_MAX ? k : -1));
}

static void check_thread_path(const char *path)
{
	pid_t tgid = -1, tid = -1;
	const char *rest = thread_path_split(path, &tgid, &tid);
	char back[PATH_MAX + 64];

	if (!rest)
		return;
	assert(tgid > 0 && tid > 0);
	assert(rest >= path && rest <= path + strlen(path));
	snprintf(back, sizeof(back), "%d/task/%d%s%s", tgid, tid, *rest ? "/" : "", rest);
	assert(!strcmp(back, path));
}

static void check_hint(const char *text, size_t size)
{
	uint64_t dir = size * 0x9e3779b97f4a7c15ULL;
	pid_t tid = (pid_t)(size % 4096) + 1;
	char entry[LINK_HINT_NAME_MAX], got[LINK_HINT_NAME_MAX];

	snprintf(entry, sizeof(entry), "%zu", size);
	link_hint_put(tid, dir, entry, text);
	link_hint_put(tid + 1, dir + 1, "other", text); /* another thread's */
	link_hint_put(0, dir, entry, text);
	assert(link_hint_get(tid, dir, text, got) == 0 && !strcmp(got, entry));
	assert(link_hint_get(tid, dir + 1, text, got) == -ENOENT);
	assert(link_hint_get(0, dir, text, got) == 0 && !strcmp(got, entry));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *name = malloc(size + 1);

	if (!name)
		return 0;
	memcpy(name, data, size);
	name[size] = '\0';
	check_numbers(name);
	assert(name_is_caller_link(name) == (!strcmp(name, "self") || !strcmp(name, "thread-self")));
	assert(!name_is_one_object(name) || name_is_link_text(name));
	assert(name_is_link_text(name) == (strchr(name, ':') != NULL));
	check_thread_path(name);
	check_hint(name, size);
	free(name);
	return 0;
}
