/* The node table handed from a server to the next one on the same
 * connection (an upgrade, a takeover, a draining restart).
 *
 * The kernel holds node ids and file handles across servers. Ids the next
 * server does not know are answered ESTALE: a path is looked up again, but
 * a file held open (an agent's pread loop on PID/stat) fails at its next
 * read. A server that stops by draining writes the nodes the kernel holds,
 * with their ids and lookup counts, into a memfd its supervisor keeps; the
 * next server reads them back before it serves, so every id goes on naming
 * the same entry, and an open handle is opened again at its first use
 * (fs/request/file.c). The record is versioned: one of another version is
 * skipped (its ids answer ESTALE, as before), never misread. */
#ifndef PROCFAST_NODE_RECORD_H
#define PROCFAST_NODE_RECORD_H

#include <stddef.h>
#include <stdint.h>

#include "cache/nodes/node.h"

/* Writes every node the table holds into fd (a memfd), replacing what it
 * held. The number written, or -errno. */
long node_record_save(int fd);

/* What a record leaves to the request path: the class of name in parent
 * (decided as a lookup decides it) and the owner's fields that depend on
 * this server (its pid namespace). NULL: not a name this server knows. */
typedef const struct name_class *(*node_record_complete_fn)(const struct node *parent,
							     const char *name,
							     struct node_owner *owner);

/* Puts the nodes recorded in fd into the table, parents first, and empties
 * fd (a server after a crash must not take them twice). The number taken,
 * or -errno. */
long node_record_load(int fd, node_record_complete_fn complete);

/* The format alone, for the unit tests: records parsed from buf, each given
 * to take; -EINVAL for a damaged one, 0 for another version. */
struct node_record {
	uint64_t serial, parent, ino, gen, nlookup;
	uint32_t kind, type, mode, uid, gid, nlink;
	int32_t pid, tgid;
	const char *name, *path;
};
long node_record_parse(const char *buf, size_t len, int (*take)(const struct node_record *r, void *arg),
		       void *arg);

#endif
