/* procfast-attach --root: a second root for a container's workload, whose
 * /proc is the view. */
#ifndef PROCFAST_ATTACH_ROOT_VIEW_H
#define PROCFAST_ATTACH_ROOT_VIEW_H

#include <sys/types.h>

/* In pid's mount namespace, makes dir (absolute, as the container sees it) a
 * recursive bind of the container's root with view (an open_tree() clone)
 * over dir/proc and the container's own mounts below /proc on top of it.
 * Reports what failed on stderr; 0 or -errno, and nothing left mounted in
 * the container on failure. */
int root_view_attach(pid_t pid, int view, const char *dir);

#endif
