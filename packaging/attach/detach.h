/* procfast-attach --detach: unmounting a view so that nothing of it stays. */
#ifndef PROCFAST_ATTACH_DETACH_H
#define PROCFAST_ATTACH_DETACH_H

/* Unmounts the procfast mount at view (lazily if it is busy) and ends its
 * FUSE connection if a copy of it outlives that (in another mount
 * namespace). 0 if nothing is mounted there; 0 or -errno, reported. */
int detach_view(const char *view);

#endif
