/* fs/entries/name_class.c: the entry tables, what a name is in its directory. */
#include <assert.h>

#include "fs/caller/reader_ns.h"
#include "fs/entries/content.h"
#include "fs/entries/name_class.h"
#include "fs/resources/resources.h"

static const struct name_class *at(const struct name_class *dir, const char *name)
{
	const struct name_class *c = name_classify(dir, name);

	assert(c);
	return c;
}

int main(void)
{
	const struct name_class *root = name_class_root(), *process, *task, *thread;

	/* every table sorted as the binary search needs */
	assert(name_class_check_tables() == 0);

	process = at(root, "1234");
	assert(process->flags & NC_TASK);
	assert(!(at(root, "01234")->flags & NC_TASK)); /* not a pid to procfs */
	assert(at(root, "self")->flags & NC_CALLER_LINK);
	assert(at(root, "thread-self")->flags & NC_CALLER_LINK);
	assert(at(root, "meminfo")->content == &resource_content);
	assert(at(root, "meminfo")->content_arg == RES_MEMINFO);
	assert(at(root, "diskstats")->content == &resource_content);
	assert(at(root, "diskstats")->content_arg == RES_DISKSTATS);
	assert(at(root, "version")->content == NULL); /* mirrored */
	assert(at(root, "socket:[1]")->flags & NC_LINK_TARGET);

	/* in a process: what depends on the reader */
	assert(at(process, "cgroup")->reader_ns & RNS(RNS_CGROUP));
	assert(at(process, "status")->reader_ns & RNS(RNS_USER));
	assert(at(process, "status")->content == &self_state_content);
	assert(at(process, "status")->content_arg == SELF_STATUS);
	assert(at(process, "environ")->content == NULL);
	assert(at(process, "stat")->reader_ns & RNS(RNS_TIME));
	assert(at(process, "maps")->reader_ns & RNS(RNS_ROOT));
	assert(at(process, "fd")->flags & NC_FILE_TABLE);

	/* read without acting as the caller only where procfs's read asks
	 * nothing of its reader (audited against base.c and array.c): never
	 * stat, wchan, io or stack (ptrace_may_access at each read), never a
	 * file evaluated in the reader's namespaces at each read */
	assert(at(process, "status")->flags & NC_READ_UNCHECKED);
	assert(at(process, "cmdline")->flags & NC_READ_UNCHECKED);
	assert(at(process, "statm")->flags & NC_READ_UNCHECKED);
	assert(!(at(process, "stat")->flags & NC_READ_UNCHECKED));
	assert(!(at(process, "wchan")->flags & NC_READ_UNCHECKED));
	assert(!(at(process, "io")->flags & NC_READ_UNCHECKED));
	assert(!(at(process, "stack")->flags & NC_READ_UNCHECKED));
	assert(!(at(process, "cgroup")->flags & NC_READ_UNCHECKED));
	assert(!(at(root, "uptime")->flags & NC_READ_UNCHECKED));

	/* a thread's files are links to its leader's while shared */
	task = at(process, "task");
	thread = at(task, "5678");
	assert(thread->flags & NC_TASK);
	assert(at(thread, "fd")->flags & NC_THREAD_FILES);
	assert(at(thread, "fdinfo")->flags & NC_THREAD_FILES);
	assert(at(thread, "net")->flags & NC_THREAD_NET);
	assert(at(thread, "cgroup")->reader_ns & RNS(RNS_CGROUP));
	return 0;
}
