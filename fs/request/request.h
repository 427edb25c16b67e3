/* One request, from an operation's first line to its last.
 *
 * Every operation of the table (ops.c) begins with REQUEST_BEGIN, which
 *  - counts the request among its uid's busy ones (fair.h): past its share
 *    it is answered EINTR (FAIR_REFUSED);
 *  - finds the node its id names: an id of an earlier server (the kernel
 *    keeps ids across a restart on the same connection, and ids are never
 *    reused: cache/nodes/node.h) is answered ESTALE, which makes the kernel
 *    look the path up again;
 * and request_act then makes the worker act as the caller, in the
 * namespaces the operation depends on (caller.h). What a request took is
 * given back by a cleanup attribute on every path out of the operation.
 * The acting ends before a reply (request_act_end, request_fail): no reply
 * is written as the caller.
 */
#ifndef PROCFAST_REQUEST_H
#define PROCFAST_REQUEST_H

#include <fuse_lowlevel.h>

#include "cache/nodes/node.h"
#include "fs/caller/caller.h"
#include "fs/caller/fair.h"

struct request {
	fuse_req_t req;
	struct node *node;
	struct fair_busy busy;
	int acting;
	struct caller caller;
};

static inline void reply_err(fuse_req_t req, int negerr)
{
	fuse_reply_err(req, negerr < 0 ? -negerr : negerr);
}

/* 0 with rq->node, or 1: the request was answered (FAIR_REFUSED, ESTALE). */
int request_begin(struct request *rq, fuse_req_t req, fuse_ino_t ino);

/* Another node the request names (rename's, link's new parent), or NULL:
 * answer ESTALE. */
struct node *request_node(fuse_ino_t ino);

/* Acts as the caller in its namespaces of ns_kinds (name_class.h's
 * reader_ns_kinds) until request_act_end. 0, or -errno. */
int request_act(struct request *rq, unsigned ns_kinds);
void request_act_end(struct request *rq);

/* Answers r (0 or -errno) once the acting ended. */
void request_fail(struct request *rq, int r);

/* The cleanup: ends the acting, gives the busy share back. */
void request_end(struct request *rq);

#define REQUEST_BEGIN(rq, req, ino)                                 \
	struct request rq __attribute__((cleanup(request_end)));     \
	if (request_begin(&rq, (req), (ino)))                          \
		return

#endif
