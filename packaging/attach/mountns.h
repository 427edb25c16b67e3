/* Going into a process's mount namespace and back. */
#ifndef PROCFAST_ATTACH_MOUNTNS_H
#define PROCFAST_ATTACH_MOUNTNS_H

#include <sys/types.h>

/* Enters pid's mount namespace. setns() also moves our root and working
 * directory to that namespace's root, so paths resolve as the container sees
 * them (after its pivot_root). An fd of our own namespace to come back with,
 * or -errno. */
int mountns_enter(pid_t pid);

/* Back to the namespace of home (mountns_enter's fd), which it closes.
 * 0 or -errno. */
int mountns_leave(int home);

#endif
