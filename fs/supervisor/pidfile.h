/* -o pidfile=FILE: the supervisor's pid, for whatever starts it and must
 * signal it later (a container's entrypoint). */
#ifndef PROCFAST_PIDFILE_H
#define PROCFAST_PIDFILE_H

/* Writes our pid to path (replaced whole: a reader never sees half of it).
 * 0 for a NULL path too; -1 with a message logged. */
int pidfile_write(const char *path);

#endif
