/* How procfast-attach and its parts say what failed: one line on stderr,
 * naming the step and the kernel's errno. */
#ifndef PROCFAST_ATTACH_REPORT_H
#define PROCFAST_ATTACH_REPORT_H

#include <stdio.h>
#include <string.h>

/* Prints "procfast-attach: WHAT: ERROR" and gives err (a -errno) back. */
static inline int attach_report(const char *what, int err)
{
	fprintf(stderr, "procfast-attach: %s: %s\n", what, strerror(-err));
	return err;
}

#endif
