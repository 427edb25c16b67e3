/* The tables that say what each name is. A directory's table lists the
 * names that are special (sorted, for bsearch), the class of a canonical
 * decimal name (pid, tid, fd) and of a link text ("socket:[N]"), and the
 * class of every other name. A name not listed is a plain mirror of the
 * source whose presence and attributes last as long as its directory.
 *
 * The reader_ns columns come from the kernel sources (6.18): what procfs
 * evaluates in current's namespaces or the opener's user namespace
 * (seq_user_ns, f_cred), named at each entry. */
#include "fs/entries/name_class.h"

#include <stdlib.h>
#include <string.h>

#include "fs/entries/content.h"
#include "fs/lib/proc_names.h"
#include "fs/resources/resources.h"

/* What remains packed: content_arg holds either enum. */
_Static_assert(RES_FILES <= 256 && SELF_WCHAN < 256, "content_arg is one byte");
/* NC_* flags fit name_class.flags. */
_Static_assert(NC_STABLE_ATTRS < (1u << 16), "name_class.flags is 16 bits");

struct name_entry {
	const char *name;
	struct name_class cls;
};

struct name_table {
	const struct name_entry *named;    /* sorted by name */
	size_t n;
	const struct name_table *more;     /* searched next for a name not listed */
	const struct name_class *numeric;  /* canonical decimal names (pids from 1,
					    * fds from 0), or NULL */
	const struct name_class *linktext; /* "type:[...]" names, or NULL */
	const struct name_class *other;
	const struct name_class *object;   /* a "type:[N]" name of one object, if not
					    * target_one */
};

#define TABLE(entries, more, num, link, rest) \
	{ entries, sizeof(entries) / sizeof(entries[0]), more, num, link, rest, NULL }

static const struct name_table plain_table, task_common, sys_net_ipv4_table, process_table, thread_table, tasks_table, fd_table,
	fdinfo_table, volatile_table, links_table, pid_net_table, sys_table, sys_kernel_table,
	sys_fs_table, sys_net_table, by_user_table, by_ipc_table, by_ipc_user_table,
	thread_fixed_table;

static const struct name_class plain = { &plain_table, LIFE_FIXED, 0, 0, NULL, 0 };


/* Link targets in any directory that holds links (fd/, ns/, ...). */
static const struct name_class target_one = { NULL, LIFE_OBJECT, 0, NC_LINK_TARGET, NULL, 0 };
static const struct name_class target_many = { NULL, LIFE_NONE, 0, NC_LINK_TARGET, NULL, 0 };

static const struct name_table plain_table = { NULL, 0, NULL, NULL, &target_many, &plain, NULL };

/* --- the root ------------------------------------------------------------ */

static const struct name_class process = { &process_table, LIFE_PROCESS, 0, NC_TASK | NC_WALK_ASKS_TASK,
					    NULL, 0 };

/* The files a container's cgroup may give (fs/resources/): LXCFS's set. */
#define RESOURCE(file, ns) { &plain_table, LIFE_FIXED, ns, 0, &resource_content, file }
/* Read at offsets (kcore, kpage*: of the memory), or a stream (kmsg) */
#define NO_SNAPSHOT(life) { &plain_table, life, 0, NC_NO_SNAPSHOT, NULL, 0 }
static const struct name_entry root_entries[] = {
	{ "cpuinfo", RESOURCE(RES_CPUINFO, 0) },
	{ "diskstats", RESOURCE(RES_DISKSTATS, 0) },
	{ "kcore", NO_SNAPSHOT(LIFE_FIXED) },
	/* security/keys/proc.c: proc_keys_start/next skip keys whose owner the
	 * opener's user namespace cannot map (seq_user_ns); which keys show is
	 * the reader's credentials (the daemon possesses none, main.c). */
	{ "key-users", { &plain_table, LIFE_FIXED, RNS(RNS_USER), 0, NULL, 0 } },
	{ "keys", { &plain_table, LIFE_FIXED, RNS(RNS_USER), 0, NULL, 0 } },
	{ "kmsg", { &plain_table, LIFE_FIXED, 0, NC_NO_SNAPSHOT | NC_READ_WAITS, NULL, 0 } },
	{ "kpagecgroup", NO_SNAPSHOT(LIFE_FIXED) },
	{ "kpagecount", NO_SNAPSHOT(LIFE_FIXED) },
	{ "kpageflags", NO_SNAPSHOT(LIFE_FIXED) },
	{ "loadavg", RESOURCE(RES_LOADAVG, 0) },
	{ "meminfo", RESOURCE(RES_MEMINFO, 0) },
	{ "self", { NULL, LIFE_FIXED, 0, NC_CALLER_LINK, NULL, 0 } },
	/* fs/proc/stat.c: btime less the reader's time namespace offset */
	{ "stat", RESOURCE(RES_STAT, RNS(RNS_TIME)) },
	/* mm/swapfile.c swap_show: file paths relative to the reader's root */
	{ "swaps", RESOURCE(RES_SWAPS, RNS(RNS_ROOT)) },
	{ "sys", { &sys_table, LIFE_FIXED, 0, 0, NULL, 0 } },
	/* ipc/util.c sysvipc_proc_open: the opener's ipc namespace, pids in its
	 * active pid namespace, uids in its user namespace */
	{ "sysvipc", { &by_ipc_user_table, LIFE_FIXED, 0, 0, NULL, 0 } },
	{ "thread-self", { NULL, LIFE_FIXED, 0, NC_CALLER_LINK, NULL, 0 } },
	/* fs/proc/uptime.c: timens_add_boottime */
	{ "uptime", RESOURCE(RES_UPTIME, RNS(RNS_TIME)) },
};
#undef RESOURCE
static const struct name_table root_table = TABLE(root_entries, NULL, &process, &target_many, &plain);

static const struct name_class root = { &root_table, LIFE_FIXED, 0, 0, NULL, 0 };

/* --- a process (PID) and a thread (PID/task/TID) ------------------------- */

/* A file whose read procfs makes from the task alone, never asking who
 * reads (no ptrace_may_access, capable() or current's namespaces at read):
 * whatever the reader may see was decided at the open. */
#define READ_UNCHECKED { &plain_table, LIFE_TASK, 0, NC_READ_UNCHECKED, NULL, 0 }

/* Entries alike in both (tgid_base_stuff and tid_base_stuff), searched
 * after each one's own. */
static const struct name_entry task_entries[] = {
	/* kernel/cgroup/cgroup.c proc_cgroup_show, cpuset.c proc_cpuset_show:
	 * paths below the reader's cgroup namespace root */
	{ "cgroup", { &plain_table, LIFE_TASK, RNS(RNS_CGROUP), 0, NULL, 0 } },
	/* base.c proc_pid_cmdline_read: the task's memory (get_mm_cmdline) */
	{ "cmdline", READ_UNCHECKED },
	/* base.c comm_show: the task's name */
	{ "comm", READ_UNCHECKED },
	{ "cpuset", { &plain_table, LIFE_TASK, RNS(RNS_CGROUP), 0, NULL, 0 } },
	/* base.c proc_pid_readlink: d_path, relative to the reader's root */
	{ "cwd", { NULL, LIFE_TASK, RNS(RNS_ROOT), 0, NULL, 0 } },
	/* base.c environ_read: the memory of the mm taken at the open (mm_access) */
	{ "environ", READ_UNCHECKED },
	{ "exe", { NULL, LIFE_TASK, RNS(RNS_ROOT), 0, NULL, 0 } },
	/* user_namespace.c uid_m_show: relative to the opener's user namespace */
	{ "gid_map", { &plain_table, LIFE_TASK, RNS(RNS_USER), 0, NULL, 0 } },
	/* audit loginuid in the opener's user namespace (f_cred) */
	{ "loginuid", { &plain_table, LIFE_TASK, RNS(RNS_USER), 0, NULL, 0 } },
	{ "map_files", { &volatile_table, LIFE_TASK, 0, 0, NULL, 0 } },
	/* task_mmu.c show_map_vma: seq_file_path, relative to the reader's root */
	{ "maps", { &plain_table, LIFE_TASK, RNS(RNS_ROOT), 0, NULL, 0 } },
	/* the task's memory, read at its addresses */
	{ "mem", NO_SNAPSHOT(LIFE_TASK) },
	/* show_mountinfo: a cgroup mount's root relative to the reader's cgroup ns */
	{ "mountinfo", { &plain_table, LIFE_TASK, RNS(RNS_CGROUP), 0, NULL, 0 } },
	{ "numa_maps", { &plain_table, LIFE_TASK, RNS(RNS_ROOT), 0, NULL, 0 } },
	{ "pagemap", NO_SNAPSHOT(LIFE_TASK) },
	{ "projid_map", { &plain_table, LIFE_TASK, RNS(RNS_USER), 0, NULL, 0 } },
	{ "root", { NULL, LIFE_TASK, RNS(RNS_ROOT), 0, NULL, 0 } },
	{ "smaps", { &plain_table, LIFE_TASK, RNS(RNS_ROOT), 0, NULL, 0 } },
	/* array.c do_task_stat: start time plus the reader's boottime offset;
	 * the reader's own state when it reads itself */
	{ "stat", { &plain_table, LIFE_TASK, RNS(RNS_TIME), 0, &self_state_content, SELF_STAT } },
	/* array.c proc_pid_statm: the task's memory counters */
	{ "statm", READ_UNCHECKED },
	/* array.c proc_pid_status: the task's state; Uid/Gid in the opener's
	 * user namespace (seq_user_ns: its f_cred) */
	{ "status", { &plain_table, LIFE_TASK, RNS(RNS_USER), NC_READ_UNCHECKED, &self_state_content,
		      SELF_STATUS } },
	{ "uid_map", { &plain_table, LIFE_TASK, RNS(RNS_USER), 0, NULL, 0 } },
	{ "wchan", { &plain_table, LIFE_TASK, 0, 0, &self_state_content, SELF_WCHAN } },
};
/* Any other name in a task's directory: fixed while the task lives. */
static const struct name_class task_plain = { &plain_table, LIFE_TASK, 0, 0, NULL, 0 };
static const struct name_table task_common = TABLE(task_entries, NULL, NULL, NULL, &task_plain);

static const struct name_entry process_entries[] = {
	{ "attr", { &plain_table, LIFE_TASK, 0, NC_STABLE_ATTRS, NULL, 0 } },
	{ "fd", { &fd_table, LIFE_TASK, 0, NC_FILE_TABLE | NC_LIST_PLUS, NULL, 0 } },
	{ "fdinfo", { &fdinfo_table, LIFE_TASK, 0, NC_FILE_TABLE | NC_WALK_ASKS_TASK, NULL, 0 } },
	/* the target's network namespace; socket owners in the opener's user
	 * namespace (tcp4_seq_show... seq_user_ns) */
	{ "net", { &pid_net_table, LIFE_TASK, 0, 0, NULL, 0 } },
	{ "ns", { &links_table, LIFE_TASK, 0, NC_STABLE_ATTRS, NULL, 0 } },
	{ "task", { &tasks_table, LIFE_TASK, 0, NC_THREADS_LINK | NC_WALK_ASKS_TASK, NULL, 0 } },
};
static const struct name_table process_table = TABLE(process_entries, &task_common, NULL,
						     &target_many, &task_plain);

/* In a thread, fd/, fdinfo/ and net/ may be the leader's; ns/ and attr/
 * are listed from templates. */
static const struct name_entry thread_entries[] = {
	{ "attr", { &thread_fixed_table, LIFE_TASK, 0, NC_TEMPLATE | NC_STABLE_ATTRS, NULL, 0 } },
	{ "fd", { &fd_table, LIFE_TASK, 0, NC_FILE_TABLE | NC_THREAD_FILES | NC_LIST_PLUS, NULL, 0 } },
	{ "fdinfo", { &fdinfo_table, LIFE_TASK, 0, NC_FILE_TABLE | NC_THREAD_FILES | NC_WALK_ASKS_TASK,
		      NULL, 0 } },
	{ "net", { &pid_net_table, LIFE_TASK, 0, NC_THREAD_NET, NULL, 0 } },
	{ "ns", { &links_table, LIFE_TASK, 0, NC_TEMPLATE | NC_STABLE_ATTRS, NULL, 0 } },
};
static const struct name_table thread_table = TABLE(thread_entries, &task_common, NULL,
						    &target_many, &task_plain);

/* attr/'s subdirectories (apparmor, smack...) are fixed for every thread too. */
static const struct name_class thread_fixed = { &thread_fixed_table, LIFE_FIXED, 0, NC_TEMPLATE, NULL, 0 };
static const struct name_table thread_fixed_table = { NULL, 0, NULL, NULL,
						      &target_many, &thread_fixed, NULL };

/* Thread ids come and go while the process lives. */
static const struct name_class thread = { &thread_table, LIFE_THREAD, 0, NC_TASK | NC_TEMPLATE, NULL, 0 };
static const struct name_table tasks_table = { NULL, 0, NULL, &thread, &target_many, &plain, NULL };

/* fd/N: a link whose text is read afresh; the number stays while open.
 * Its text is a path relative to the reader's root (d_path). */
static const struct name_class fd_link = { NULL, LIFE_NAME, RNS(RNS_ROOT), 0, NULL, 0 };
static const struct name_table fd_table = { NULL, 0, NULL, &fd_link, &target_many, &plain, NULL };

/* Names that come and go while their directory lives. */
static const struct name_class volatile_name = { NULL, LIFE_NONE, 0, 0, NULL, 0 };
static const struct name_table fdinfo_table = { NULL, 0, NULL, &volatile_name,
						&target_many, &plain, NULL };
/* map_files/ADDR-ADDR: links to the mapped files, relative to the reader's root */
static const struct name_class mapped_file = { NULL, LIFE_NONE, RNS(RNS_ROOT), 0, NULL, 0 };
static const struct name_table volatile_table = { NULL, 0, NULL, &mapped_file, &target_many,
						  &mapped_file, NULL };

/* ns/: fixed names that are links, as long as the task lives (pstree stats
 * each one of every process). A namespace's file keeps its attributes for
 * as long as it is named (fs/nsfs.c makes them once), so those of the
 * namespace a link names last as long as the name. */
static const struct name_class ns_link = { NULL, LIFE_TASK, 0, 0, NULL, 0 };
static const struct name_class ns_object = { NULL, LIFE_OBJECT, 0,
					     NC_LINK_TARGET | NC_STABLE_ATTRS, NULL, 0 };
static const struct name_table links_table = { NULL, 0, NULL, NULL, &target_many, &ns_link,
					       &ns_object };

static const struct name_class pid_net = { &pid_net_table, LIFE_FIXED, RNS(RNS_USER), 0, NULL, 0 };
static const struct name_table pid_net_table = { NULL, 0, NULL, NULL,
						 &target_many, &pid_net, NULL };

/* --- sys/ ------------------------------------------------------------------ */

/* net/sysctl_net.c: net_ctl_header_lookup and is_seen pick the reader's
 * network namespace at lookup, net_ctl_permissions its owner and mode: the
 * names below sys/net, their attributes and contents are the reader's
 * namespace's. The kernel's caches are shared by every reader: they keep a
 * name while it is there (every operation on it asks in the reader's
 * namespace, which may not have it: ENOENT then), never its absence, which
 * another namespace may not share, nor attributes. */
static const struct name_class sys_net_name = { &sys_net_table, LIFE_NAME, RNS(RNS_NET),
						NC_NAMES_VARY, NULL, 0 };
static const struct name_entry sys_net_ipv4_entries[] = {
	/* net/ipv4/sysctl_net_ipv4.c ipv4_ping_group_range: gids in the reader's
	 * user namespace, at each read and write */
	{ "ping_group_range", { &sys_net_table, LIFE_NAME, RNS(RNS_NET) | RNS(RNS_USER),
				NC_NAMES_VARY, NULL, 0 } },
};
static const struct name_table sys_net_ipv4_table = TABLE(sys_net_ipv4_entries, NULL, NULL, NULL,
							  &sys_net_name);
static const struct name_entry sys_net_entries[] = {
	{ "ipv4", { &sys_net_ipv4_table, LIFE_NAME, RNS(RNS_NET), NC_NAMES_VARY, NULL, 0 } },
};
static const struct name_table sys_net_table = TABLE(sys_net_entries, NULL, NULL, NULL,
						     &sys_net_name);

/* Whole subtrees in one namespace. */
static const struct name_class by_user = { &by_user_table, LIFE_FIXED, RNS(RNS_USER), 0, NULL, 0 };
static const struct name_table by_user_table = { NULL, 0, NULL, NULL, NULL, &by_user, NULL };
/* ipc/ipc_sysctl.c and mq_sysctl.c set an entry's owner to its namespace's
 * root (set_ownership): attributes are the reader's namespace's, as below
 * sys/net, asked at each walk (the kernel's mode check, default_permissions,
 * reads them). */
static const struct name_class by_ipc = { &by_ipc_table, LIFE_NAME, RNS(RNS_IPC), NC_NAMES_VARY, NULL, 0 };
static const struct name_table by_ipc_table = { NULL, 0, NULL, NULL, NULL, &by_ipc, NULL };
static const struct name_class by_ipc_user = { &by_ipc_user_table, LIFE_FIXED,
					       RNS(RNS_IPC) | RNS(RNS_USER) | RNS(RNS_PID), 0, NULL, 0 };
static const struct name_table by_ipc_user_table = { NULL, 0, NULL, NULL,
						     NULL, &by_ipc_user, NULL };

#define UTS { &plain_table, LIFE_FIXED, RNS(RNS_UTS), 0, NULL, 0 }
#define IPC { &plain_table, LIFE_NAME, RNS(RNS_IPC), NC_NAMES_VARY, NULL, 0 }
#define PIDNS { &plain_table, LIFE_FIXED, RNS(RNS_PID), 0, NULL, 0 }
static const struct name_entry sys_kernel_entries[] = {
	/* ipc/ipc_sysctl.c: the ipc namespace's own table (set_lookup, is_seen) */
	{ "auto_msgmni", IPC },
	/* kernel/reboot.c proc_do_cad_pid: the pid in the reader's pid namespace */
	{ "cad_pid", PIDNS },
	/* kernel/utsname_sysctl.c proc_do_uts_string: current's uts namespace */
	{ "domainname", UTS },
	{ "hostname", UTS },
	{ "msg_next_id", IPC },
	{ "msgmax", IPC },
	{ "msgmnb", IPC },
	{ "msgmni", IPC },
	/* kernel/pid_namespace.c pid_ns_ctl_handler: task_active_pid_ns(current) */
	{ "ns_last_pid", PIDNS },
	{ "osrelease", UTS },
	{ "ostype", UTS },
	/* kernel/pid.c (6.14+): pid_max of the reader's active pid namespace */
	{ "pid_max", PIDNS },
	{ "sem", IPC },
	{ "sem_next_id", IPC },
	{ "shm_next_id", IPC },
	{ "shm_rmid_forced", IPC },
	{ "shmall", IPC },
	{ "shmmax", IPC },
	{ "shmmni", IPC },
	{ "version", UTS },
};
#undef UTS
#undef IPC
#undef PIDNS
static const struct name_table sys_kernel_table = TABLE(sys_kernel_entries, NULL, NULL, NULL, &plain);

static const struct name_entry sys_fs_entries[] = {
	/* ipc/mq_sysctl.c: the ipc namespace's own table */
	{ "mqueue", { &by_ipc_table, LIFE_NAME, RNS(RNS_IPC), NC_NAMES_VARY, NULL, 0 } },
};
static const struct name_table sys_fs_table = TABLE(sys_fs_entries, NULL, NULL, NULL, &plain);

static const struct name_entry sys_vm_entries[] = {
	/* kernel/pid_namespace.c pid_mfd_noexec_dointvec_minmax: the reader's
	 * pid namespace's memfd_noexec */
	{ "memfd_noexec", { &plain_table, LIFE_FIXED, RNS(RNS_PID), 0, NULL, 0 } },
};
static const struct name_table sys_vm_table = TABLE(sys_vm_entries, NULL, NULL, NULL, &plain);

static const struct name_entry sys_entries[] = {
	{ "fs", { &sys_fs_table, LIFE_FIXED, 0, 0, NULL, 0 } },
	{ "kernel", { &sys_kernel_table, LIFE_FIXED, 0, 0, NULL, 0 } },
	/* sys/net itself is in every namespace; its owner is the namespace's */
	{ "net", { &sys_net_table, LIFE_NAME, RNS(RNS_NET), NC_NAMES_VARY, NULL, 0 } },
	/* kernel/ucount.c: the user namespace's own table (set_lookup, is_seen) */
	{ "user", { &by_user_table, LIFE_FIXED, RNS(RNS_USER), 0, NULL, 0 } },
	{ "vm", { &sys_vm_table, LIFE_FIXED, 0, 0, NULL, 0 } },
};
static const struct name_table sys_table = TABLE(sys_entries, NULL, NULL, NULL, &plain);

/* --- lookups ---------------------------------------------------------------- */

const struct name_class *name_class_root(void)
{
	return &root;
}

static int entry_cmp(const void *key, const void *elem)
{
	return strcmp(key, ((const struct name_entry *)elem)->name);
}

static const struct name_entry *find(const struct name_table *t, const char *name)
{
	for (; t; t = t->more) {
		const struct name_entry *e = t->n ? bsearch(name, t->named, t->n, sizeof(*e), entry_cmp)
						  : NULL;
		if (e)
			return e;
	}
	return NULL;
}

/* Tasks are numbered from 1, files from 0. */
static int numeric(const struct name_class *cls, const char *name)
{
	return cls->flags & NC_TASK ? name_pid(name) > 0 : name_fd(name) >= 0;
}

const struct name_class *name_classify(const struct name_class *dir, const char *name)
{
	const struct name_table *t = dir && dir->children ? dir->children : &plain_table;
	const struct name_entry *e = find(t, name);

	if (e)
		return &e->cls;
	if (t->numeric && numeric(t->numeric, name))
		return t->numeric;
	if (t->linktext && name_is_link_text(name))
		return !name_is_one_object(name) ? t->linktext : t->object ? t->object : &target_one;
	return t->other;
}

static int sorted(const struct name_table *t)
{
	for (size_t i = 1; i < t->n; i++)
		if (strcmp(t->named[i - 1].name, t->named[i].name) >= 0)
			return 0;
	return 1;
}

int name_class_check_tables(void)
{
	const struct name_table *all[] = { &root_table, &task_common, &process_table, &thread_table,
					   &sys_table, &sys_kernel_table, &sys_fs_table, &sys_vm_table,
					   &sys_net_table, &sys_net_ipv4_table };

	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		if (!sorted(all[i]))
			return -1;
	return 0;
}
