/* Memory files for snapshots (snapshot.h), made ahead: each empty and
 * registered with the kernel as a backing file. An open takes one instead of
 * making it (memfd_create, the registration) while its opener waits; the
 * release of a snapshot makes the next one, after its reply. A memory file
 * is never used twice: a reader may have mapped its snapshot (passthrough
 * maps the backing file), and the mapping outlives the open. */
#ifndef PROCFAST_SNAPSHOT_POOL_H
#define PROCFAST_SNAPSHOT_POOL_H

/* An empty registered memory file: its fd (the caller closes it once its
 * content is written) and *id; or -1 where none can be made. */
int snapshot_pool_take(int *id);

/* A snapshot released: its backing file goes, and the pool gets one more
 * (up to its size). */
void snapshot_pool_release(int id);

#endif
