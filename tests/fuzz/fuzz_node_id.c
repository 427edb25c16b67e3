/* node_from_ino (cache/nodes/node.c): the kernel hands node ids back, and after a
 * restart it hands back ids of the dead server (fs/request/request.h). Node ids are not
 * decoded but looked up, so the properties are:
 *  - any id is either unknown (NULL) or names the node it was given for;
 *  - ids are never below the boot clock at the table's start, so those of an
 *    earlier server (made earlier in the boot) are never given again;
 *  - nothing crashes, whatever the id. */
#include <assert.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cache/nodes/node.h"

#define NODES 16

static struct node *made[NODES];
static uint64_t table_start;

static void setup(void)
{
	struct stat st = { .st_mode = S_IFREG | 0444 };
	struct node_identity id = { .kind = NODE_MIRROR, .type = S_IFREG };
	struct node_owner owner = { 0 };
	struct timespec ts;
	char name[16];

	clock_gettime(CLOCK_BOOTTIME, &ts);
	table_start = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
	assert(node_table_init(NULL) == 0);
	for (int i = 0; i < NODES; i++) {
		snprintf(name, sizeof(name), "n%d", i);
		made[i] = node_get_or_insert(node_root(), name, name, &st, &id, &owner, NULL, 0);
		assert(made[i] && node_ino(made[i]) > table_start);
	}
}

static int ours(uint64_t id)
{
	for (int i = 0; i < NODES; i++)
		if (node_ino(made[i]) == id)
			return 1;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int ready;

	if (!ready) {
		setup();
		ready = 1;
	}
	for (size_t off = 0; off + 8 <= size; off += 8) {
		uint64_t id;
		struct node *n;

		memcpy(&id, data + off, 8);
		/* also ids near ours, where a wrong lookup would most likely land */
		if (data[off] & 1)
			id = node_ino(made[data[off] % NODES]) + (uint64_t)(int8_t)data[off + 1];
		n = node_from_ino(id);
		if (id == NODE_ROOT_ID)
			assert(n == node_root());
		else if (n)
			assert(ours(id) && node_ino(n) == id);
		else
			assert(!ours(id));
	}
	return 0;
}
