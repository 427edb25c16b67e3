/* fs/lib/proc_names.c: the names procfs accepts, decided from their text alone. */
#include <assert.h>
#include <limits.h>
#include <string.h>

#include "fs/lib/proc_names.h"

static void pids(void)
{
	assert(name_pid("1") == 1);
	assert(name_pid("4194304") == 4194304);
	assert(name_pid("2147483647") == INT_MAX);
	/* what procfs's name_to_int refuses */
	const char *refused[] = { "0", "01", "-1", "+1", " 1", "1 ", "2147483648", "1a", "", "self" };

	for (size_t i = 0; i < sizeof(refused) / sizeof(*refused); i++)
		assert(name_pid(refused[i]) == 0);
}

static void fds(void)
{
	assert(name_fd("0") == 0);
	assert(name_fd("1023") == 1023);
	assert(name_fd("00") == -1 && name_fd("-1") == -1 && name_fd("") == -1 && name_fd("x") == -1);
}

static void links(void)
{
	assert(name_is_caller_link("self") && name_is_caller_link("thread-self"));
	assert(!name_is_caller_link("selfish") && !name_is_caller_link("1"));
	assert(name_is_link_text("socket:[159173]") && name_is_link_text("anon_inode:[eventfd]"));
	assert(!name_is_link_text("status") && !name_is_link_text("1"));
	assert(name_is_one_object("socket:[159173]") && name_is_one_object("pipe:[7]"));
	assert(!name_is_one_object("anon_inode:[eventfd]"));
}

static void thread_paths(void)
{
	pid_t tgid = 0, tid = 0;
	const char *rest = thread_path_split("12/task/34/status", &tgid, &tid);

	assert(rest && !strcmp(rest, "status") && tgid == 12 && tid == 34);
	rest = thread_path_split("12/task/34", &tgid, &tid);
	assert(rest && !strcmp(rest, ""));
	assert(!thread_path_split("12/task", &tgid, &tid));
	assert(!thread_path_split("012/task/34", &tgid, &tid));
	assert(!thread_path_split("12/tasks/34", &tgid, &tid));
}

int main(void)
{
	pids();
	fds();
	links();
	thread_paths();
	return 0;
}
