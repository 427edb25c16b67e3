/* Memory files made ahead for snapshots (snapshot_pool.h). */
#include "fs/request/snapshot_pool.h"

#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fs/lib/fuse_passthrough.h"

/* enough for a burst of opens between releases; each is one fd of the daemon's */
#define POOL_MAX 16

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct made {
	int fd, id;
} pool[POOL_MAX];
static int pooled;

static int make(int *id)
{
	int fd = memfd_create("procfast-snapshot", MFD_CLOEXEC);

	if (fd < 0)
		return -1;
	if ((*id = passthrough_register(fd)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

int snapshot_pool_take(int *id)
{
	struct made m = { -1, 0 };

	pthread_mutex_lock(&lock);
	if (pooled)
		m = pool[--pooled];
	pthread_mutex_unlock(&lock);
	if (m.fd < 0)
		return make(id);
	*id = m.id;
	return m.fd;
}

void snapshot_pool_release(int id)
{
	struct made m;

	passthrough_unregister(id);
	pthread_mutex_lock(&lock);
	if (pooled < POOL_MAX && (m.fd = make(&m.id)) >= 0)
		pool[pooled++] = m;
	pthread_mutex_unlock(&lock);
}
