/* CPU lists as the kernel writes them ("0-3,8,10-11": cpuset.cpus,
 * /sys/devices/system/cpu/online) into glibc's cpu_set_t. */
#ifndef PROCFAST_CPULIST_H
#define PROCFAST_CPULIST_H

#include <sched.h>

/* 0, or -EINVAL (not a list, or a CPU beyond CPU_SETSIZE). */
int cpulist_parse(const char *text, cpu_set_t *set);

#endif
