/* fs/lib/proc_fields.c, fs/lib/cpulist.c and what test_names.c leaves of
 * fs/lib/proc_names.c: the texts a process's stat and status files hold, as
 * the kernel writes them and as a hostile comm or a short read leaves them. */
#include <assert.h>
#include <errno.h>
#include <sched.h>
#include <string.h>

#include "fs/lib/cpulist.h"
#include "fs/lib/proc_fields.h"
#include "fs/lib/proc_names.h"

/* Fields 3..23 after the comm: state S, ppid 1, ..., flags (9) 4194560,
 * utime (14) 5, stime (15) 3, starttime (22) 98765, vsize (23) 12345678. */
#define STAT_TAIL "S 1 1234 1234 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 1 0 98765 12345678\n"

static void stat_plain(void)
{
	const char *line = "1234 (bash) " STAT_TAIL;
	unsigned long long v = 0;
	uint64_t start = 0;
	int exited = -1;

	assert(stat_parse(line, &exited, &start) == 0 && !exited && start == 98765);
	assert(stat_number(line, 4, &v) == 0 && v == 1);
	assert(stat_number(line, 9, &v) == 0 && v == 4194560);
	assert(stat_number(line, 15, &v) == 0 && v == 3);
	assert(stat_number(line, 23, &v) == 0 && v == 12345678); /* the last: ends in '\n' */
	assert(stat_number(line, 24, &v) == -1);                 /* beyond the line */
	assert(stat_number(line, 8, &v) == -1);                  /* tpgid -1: not a number */
	assert(stat_number(line, 3, &v) == -1 && stat_number(line, 2, &v) == -1);
}

/* A comm may hold spaces, ')' and even what looks like the next fields:
 * only the last ')' ends it. */
static void stat_hostile_comm(void)
{
	const char *line = "77 (a b) Z 9 9 9) " STAT_TAIL;
	const char *nl = "78 (x\n) Z 1) " STAT_TAIL;
	unsigned long long v = 0;
	uint64_t start = 0;
	int exited = -1;

	assert(stat_parse(line, &exited, &start) == 0 && !exited && start == 98765);
	assert(stat_number(line, 4, &v) == 0 && v == 1);
	assert(stat_parse(nl, &exited, &start) == 0 && !exited && start == 98765);
	/* an empty comm, and one that is only ')' */
	assert(stat_parse("79 () " STAT_TAIL, &exited, &start) == 0 && start == 98765);
	assert(stat_parse("80 ())) " STAT_TAIL, &exited, &start) == 0 && start == 98765);
}

static void stat_exited(void)
{
	uint64_t start = 0;
	int exited = 0;

	assert(stat_parse("5 (zombie) Z 1 5 5 0 -1 4227084 0 0 0 0 0 0 0 0 20 0 1 0 4242 0\n",
			  &exited, &start) == 0 && exited == 1 && start == 4242);
	exited = 0;
	assert(stat_parse("6 (dead) X 1 6 6 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 17 0\n", &exited,
			  &start) == 0 && exited == 1 && start == 17);
	/* a thread that is merely stopped or traced has not exited */
	assert(stat_parse("7 (t) t 1 7 7 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 17 0\n", &exited,
			  &start) == 0 && exited == 0);
}

/* A read cut short: the state alone tells whether the task exited. */
static void stat_cut_short(void)
{
	unsigned long long v = 0;
	uint64_t start = 7;
	int exited = -1;

	assert(stat_parse("1234 (sh) S 1 1234", &exited, &start) == -1 && exited == 0);
	assert(start == 7); /* untouched */
	assert(stat_parse("1234 (sh) Z 1", &exited, &start) == -1 && exited == 1);
	/* no state at all: taken as exited (nothing to cache on) */
	exited = 0;
	assert(stat_parse("1234 (sh)", &exited, &start) == -1 && exited == 1);
	exited = 0;
	assert(stat_parse("1234 (sh) ", &exited, &start) == -1 && exited == 1);
	exited = 0;
	assert(stat_parse("1234 (sh", &exited, &start) == -1 && exited == 1);
	exited = 0;
	assert(stat_parse("", &exited, &start) == -1 && exited == 1);
	assert(stat_number("1234 (sh) S 1 12", 5, &v) == 0 && v == 12);
	assert(stat_number("1234 (sh) S 1 12x", 5, &v) == -1);
	assert(stat_number("1234 (sh) S 1 99999999999999999999999", 5, &v) == -1); /* ERANGE */
}

#define STATUS "Name:\tTgid: 1 (fake)\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t4321\n" \
	       "Ngid:\t0\nPid:\t4325\nPPid:\t1\nTracerPid:\t0\n"                      \
	       "Uid:\t1000\t1001\t1002\t1003\nGid:\t100\t101\t102\t4294967295\n"       \
	       "FDSize:\t64\nGroups:\t4 24 27 30 \nNStgid:\t4321\t1\nNSpid:\t4325\t5\n"

static void status_fields(void)
{
	struct task_ids ids;
	gid_t groups[8];

	/* only a line's start is a key: not inside Name:, nor NStgid: */
	assert(status_tgid(STATUS) == 4321);
	assert(status_tgid("NStgid:\t7\n") == 0);
	assert(status_tgid("Name:\tx\nTgid:\t2147483647\n") == 2147483647);
	assert(status_tgid("Tgid:\t2147483648\n") == 0 && status_tgid("Tgid:\t-5\n") == 0);
	assert(status_tgid("Tgid:\n") == 0 && status_tgid("") == 0);

	assert(status_ids(STATUS, &ids) == 0);
	assert(ids.uid[IDS_REAL] == 1000 && ids.uid[IDS_EFFECTIVE] == 1001);
	assert(ids.uid[IDS_SAVED] == 1002 && ids.uid[IDS_FS] == 1003);
	assert(ids.gid[IDS_REAL] == 100 && ids.gid[IDS_FS] == 4294967295u);
	/* a line missing or short */
	assert(status_ids("Uid:\t0\t0\t0\t0\n", &ids) == -1);
	assert(status_ids("Uid:\t0\t0\t0\nGid:\t0\t0\t0\t0\n", &ids) == -1);
	assert(status_ids("Uid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t4294967296\n", &ids) == -1);

	assert(status_groups(STATUS, groups, 8) == 4);
	assert(groups[0] == 4 && groups[1] == 24 && groups[2] == 27 && groups[3] == 30);
	/* more groups than room: the first max, the rest untouched */
	groups[2] = 999;
	assert(status_groups(STATUS, groups, 2) == 2 && groups[0] == 4 && groups[1] == 24);
	assert(groups[2] == 999);
	assert(status_groups("Groups:\t\nNStgid:\t1\n", groups, 8) == 0); /* none: not the next line's */
	assert(status_groups("Name:\tx\n", groups, 8) == 0);
}

static int cpus_of(const char *list, cpu_set_t *set)
{
	int r = cpulist_parse(list, set);

	return r ? r : CPU_COUNT(set);
}

static void cpulists(void)
{
	cpu_set_t set;

	assert(cpus_of("0-3,8", &set) == 5);
	for (int c = 0; c < 16; c++)
		assert(!!CPU_ISSET(c, &set) == (c <= 3 || c == 8));
	assert(cpus_of("0-3,8\n", &set) == 5); /* as read from the file */
	assert(cpus_of("5", &set) == 1 && CPU_ISSET(5, &set));
	assert(cpus_of("1023", &set) == 1 && CPU_ISSET(1023, &set));
	assert(cpus_of("", &set) == 0 && cpus_of("\n", &set) == 0); /* an empty cpuset */
	const char *refused[] = { "0-", "-3", "3-1", "garbage", "0,x", "1,,2", "0-3 ", "1024", "0-1024" };

	for (size_t i = 0; i < sizeof(refused) / sizeof(*refused); i++)
		assert(cpulist_parse(refused[i], &set) == -EINVAL);
}

/* What test_names.c does not: the bounds, and odd link texts and paths. */
static void names(void)
{
	pid_t tgid = 0, tid = 0;
	const char *rest;

	assert(name_fd("2147483647") == 2147483647 && name_fd("2147483648") == -1);
	assert(name_fd("01") == -1 && name_fd("1 ") == -1);
	assert(name_pid("99999999999999999999") == 0); /* no wrap-around to a pid */
	assert(name_pid("4294967297") == 0);
	assert(name_is_one_object("net:[4026531840]") && name_is_one_object("mnt:[1]"));
	assert(!name_is_one_object("pipe:[]") && !name_is_one_object("socket:[") &&
	       !name_is_one_object("socket:x") && !name_is_one_object("anon_inode:[7]"));
	assert(!name_is_link_text("") && !name_is_caller_link(""));
	rest = thread_path_split("12/task/34/fd/3", &tgid, &tid);
	assert(rest && !strcmp(rest, "fd/3") && tgid == 12 && tid == 34);
	assert(!thread_path_split("12/task/34/", &tgid, &tid)); /* a trailing slash */
	assert(!thread_path_split("12/task/0", &tgid, &tid) && !thread_path_split("0/task/1", &tgid, &tid));
	assert(!thread_path_split("12/task/34x", &tgid, &tid));
}

int main(void)
{
	stat_plain();
	stat_hostile_comm();
	stat_exited();
	stat_cut_short();
	status_fields();
	cpulists();
	names();
	return 0;
}
