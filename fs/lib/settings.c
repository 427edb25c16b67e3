/* The mount's settings (settings.h). */
#include "fs/lib/settings.h"

struct procfast pf = { .srcfd = -1, .selfproc = -1 };
