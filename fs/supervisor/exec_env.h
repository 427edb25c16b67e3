/* Our own binary, as the procfast executed next (an upgrade, a successor,
 * a server of a handed-over mount) finds it; what it is handed is the
 * hand-over record (handover.h). */
#ifndef PROCFAST_EXEC_ENV_H
#define PROCFAST_EXEC_ENV_H

#include <stddef.h>

/* Our binary's path, as an upgrade left it ("(deleted)" taken off). */
int self_exe(char *buf, size_t len);

#endif
