/* One request's context (request.h). */
#include "fs/request/request.h"

#include <errno.h>

#include "cache/index/pidgen.h"

int request_begin(struct request *rq, fuse_req_t req, fuse_ino_t ino)
{
	rq->req = req;
	rq->acting = 0;
	rq->node = NULL;
	/* what an earlier request learnt of a process or a caller is not this one's */
	pidgen_begin();
	reader_ns_request(1);
	if (!fair_busy_begin(req, &rq->busy))
		return 1; /* answered FAIR_REFUSED */
	if (!(rq->node = request_node(ino))) {
		fuse_reply_err(req, ESTALE);
		return 1;
	}
	return 0;
}

struct node *request_node(fuse_ino_t ino)
{
	return node_from_ino(ino);
}

int request_act(struct request *rq, unsigned ns_kinds)
{
	int r;

	if (rq->acting)
		request_act_end(rq);
	if ((r = caller_begin(rq->req, ns_kinds, &rq->caller)))
		return r;
	rq->acting = 1;
	return 0;
}

void request_act_end(struct request *rq)
{
	if (!rq->acting)
		return;
	rq->acting = 0;
	caller_end(&rq->caller);
}

void request_fail(struct request *rq, int r)
{
	request_act_end(rq);
	reply_err(rq->req, r);
}

void request_end(struct request *rq)
{
	request_act_end(rq);
	reader_ns_request(0);
	fair_busy_end(&rq->busy);
}
