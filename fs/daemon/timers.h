/* The server's periodic housekeeping, as a service of its own: one thread
 * that runs each sweep of the table in timers.c at its period. */
#ifndef PROCFAST_TIMERS_H
#define PROCFAST_TIMERS_H

/* Starts the thread (in the process that serves: threads die in fork()).
 * 0 or -errno. */
int timers_start(void);

/* Stops it, a sweep under way first finished. */
void timers_stop(void);

#endif
