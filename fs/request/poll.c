/* POLL: what a poll of a handle gives its poller now, and a watch for
 * pollers that must sleep (poll_watch.h). procfs answers a poll of its
 * source file; a file without poll of its own gives the kernel's default
 * (readable and writable), which is what a poll of the source fd gives.
 *
 * Its cost: the kernel asks at each epoll_ctl(ADD) too, and Go's runtime
 * adds every file it opens to its epoll (os.Open): one more round trip a
 * file for a Go agent (187 POLLs in a node_exporter scrape of 1,300
 * requests here). -o nopoll answers ENOSYS, after which the kernel asks
 * no more and gives every file of the mount as ready at once.
 *
 * A POLL is never refused (fair.h) nor failed: the kernel gives a poll
 * that failed as EPOLLERR, which Go takes as the file's error at its next
 * read (node_exporter's collectors failed while root's share was busy and
 * its POLLs were refused with EINTR). It holds no thread: it never waits. */
#include "fs/request/poll.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include "fs/lib/settings.h"
#include "fs/request/handle.h"
#include "fs/request/open_file.h"
#include "fs/request/poll_watch.h"
#include "fs/request/request.h"

/* The kernel's DEFAULT_POLLMASK: what a file without poll gives. */
#define DEFAULT_POLLMASK (POLLIN | POLLOUT | POLLRDNORM | POLLWRNORM)

/* The fd whose readiness is the handle's: its source fd, or for a handle a
 * helper serves (which opens the path again at each read: no fd here) the
 * daemon's own open of the path, made at its first poll and kept with the
 * handle. Readiness is the file's whoever opened it (mountinfo's is the
 * target's mount namespace's, a sysctl's its table's), and the caller had
 * the file opened already. It is one more fd of the caller's: counted in
 * its shares (fair.h), past which the file polls as one without poll. -1
 * where none could be had. */
static int poll_fd(fuse_req_t req, const struct node *n, struct open_file *of)
{
	int fd = atomic_load(&of->poll_fd), none = -1;
	struct fair_hold hold = { 0 };

	if (of->head.fd >= 0)
		return of->head.fd;
	if (fd >= 0 || fair_handle_take(req, &hold))
		return fd;
	fd = openat(pf.srcfd, n->path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
	if (fd >= 0 && atomic_compare_exchange_strong(&of->poll_fd, &none, fd)) {
		of->poll_share = hold;
		return fd;
	}
	fair_handle_release(&hold);
	if (fd >= 0)
		close(fd); /* another poll's is there */
	return none;
}

/* What a poll of fd gives now; fd -1: a file without poll. */
static unsigned ready_now(int fd, unsigned events)
{
	struct pollfd p = { .fd = fd, .events = (short)events };

	if (fd < 0)
		return DEFAULT_POLLMASK & events;
	return poll(&p, 1, 0) > 0 ? (unsigned short)p.revents : 0;
}

/* A poll handle no watch took, on every path out (a refused request's too). */
static void pollhandle_drop(struct fuse_pollhandle **ph)
{
	if (*ph)
		fuse_pollhandle_destroy(*ph);
}

void pf_poll(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
	     struct fuse_pollhandle *ph)
{
	struct fuse_pollhandle *untaken __attribute__((cleanup(pollhandle_drop))) = ph;
	struct node *n = request_node(ino);
	struct open_file *of = n ? handle_find(fi->fh) : NULL;
	unsigned revents;
	int fd;

	/* the kernel asks no more: every file is ready at once from then on */
	if (pf.no_poll)
		return (void)fuse_reply_err(req, ENOSYS);
	/* A handle of an earlier server not opened here yet (open_file.h): as a
	 * file without poll. */
	if (!of)
		return (void)fuse_reply_poll(req, ready_now(-1, fi->poll_events));
	fd = poll_fd(req, n, of);
	revents = (poll_watch_take(&of->poll_watch) & (fi->poll_events | POLLERR | POLLHUP)) |
		  ready_now(fd, fi->poll_events);
	if (!revents && ph && fd >= 0 && !poll_watch_arm(&of->poll_watch, fd, fi->poll_events, ph))
		untaken = NULL;
	fuse_reply_poll(req, revents);
}
