#include "fs/daemon/options.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs/lib/fuse_passthrough.h"
#include "fs/lib/kernel_feature.h"
#include "fs/resources/resources.h"
#include "fs/transport/transport.h"

enum { KEY_RO, KEY_ALLOW_OTHER, KEY_NO_ALLOW_OTHER, KEY_AUTO_UNMOUNT, KEY_MAX_THREADS };

static const struct fuse_opt option_spec[] = {
	{ "source=%s", offsetof(struct options, source), 0 },
	{ "entry_timeout=%lf", offsetof(struct options, entry_timeout), 0 },
	{ "attr_timeout=%lf", offsetof(struct options, attr_timeout), 0 },
	{ "events=%s", offsetof(struct options, events), 0 },
	{ "event_rcvbuf=%d", offsetof(struct options, event_rcvbuf), 0 },
	{ "scan_lifetime=%u", offsetof(struct options, scan_ms), 0 },
	{ "nodedup", offsetof(struct options, no_dedup), 1 },
	{ "nopoll", offsetof(struct options, no_poll), 1 },
	{ "norestart", offsetof(struct options, no_restart), 1 },
	{ "snapshot", offsetof(struct options, snapshot), 1 },
	{ "pidns=%s", offsetof(struct options, pidns), 0 },
	{ "hidepid=%s", offsetof(struct options, hidepid), 0 },
	{ "subset=%s", offsetof(struct options, subset), 0 },
	{ "gid=%s", offsetof(struct options, gid), 0 },
	{ "control=%s", offsetof(struct options, control), 0 },
	{ "daemon=%s", offsetof(struct options, daemon), 0 },
	{ "takeover", offsetof(struct options, takeover), 1 },
	{ "pidfile=%s", offsetof(struct options, pidfile), 0 },
	{ "resources=%s", offsetof(struct options, resources), 0 },
	{ "cgroup_root=%s", offsetof(struct options, cgroup_root), 0 },
	{ "uring=%s", offsetof(struct options, uring), 0 },
	{ "uring_threads=%u", offsetof(struct options, uring_threads), 0 },
	{ "max_handles_per_uid=%u", offsetof(struct options, max_handles_per_uid), 0 },
	{ "max_handles_per_container=%u", offsetof(struct options, max_handles_per_container), 0 },
	{ "max_busy_per_uid=%u", offsetof(struct options, max_busy_per_uid), 0 },
	{ "without=%s", offsetof(struct options, without), 0 },
	FUSE_OPT_KEY("ro", KEY_RO),
	FUSE_OPT_KEY("auto_unmount", KEY_AUTO_UNMOUNT),
	FUSE_OPT_KEY("max_threads=", KEY_MAX_THREADS),
	FUSE_OPT_KEY("allow_other", KEY_ALLOW_OTHER),
	FUSE_OPT_KEY("noallow_other", KEY_NO_ALLOW_OTHER),
	/* mount(8) passes these VFS flags on and libfuse 3.14 refuses them;
	 * times come from the source, so they change nothing here. */
	FUSE_OPT_KEY("relatime", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("strictatime", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("nodiratime", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("lazytime", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("silent", FUSE_OPT_KEY_DISCARD),
	/* fstab words that mount(8) drops but mount.fuse3 run by hand passes on */
	FUSE_OPT_KEY("defaults", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("comment=", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_END
};

static int option_key(void *data, const char *arg, int key, struct fuse_args *outargs)
{
	struct options *o = data;

	(void)outargs;
	switch (key) {
	case KEY_RO:
		o->read_only = 1;
		return 1; /* keep: the kernel mounts read-only too */
	case KEY_ALLOW_OTHER:
		o->has_allow_other = 1;
		return 1;
	case KEY_NO_ALLOW_OTHER:
		o->no_allow_other = 1;
		return 0;
	case KEY_AUTO_UNMOUNT:
		o->auto_unmount = 1;
		return 1;
	case KEY_MAX_THREADS:
		o->has_max_threads = 1;
		return 1; /* libfuse's */
	case FUSE_OPT_KEY_OPT:
		/* x-* options are for other programs (systemd, mount(8)) */
		return strncmp(arg, "x-", 2) ? 1 : 0;
	case FUSE_OPT_KEY_NONOPT:
		/* mount.fuse3 runs "procfast DEVICE MOUNTPOINT -o ..." for
		 * "-t fuse.procfast": keep both and sort them out after. */
		if (o->npositional == 2) {
			fprintf(stderr, "procfast: unexpected argument %s (see --help)\n", arg);
			return -1;
		}
		o->positional[o->npositional] = strdup(arg);
		return o->positional[o->npositional++] ? 0 : -1;
	}
	return 1;
}

/* "procfast [DEVICE] MOUNTPOINT": DEVICE is "procfast" or "none" as in an
 * fstab line, or a procfs to mirror ("mount -t fuse.procfast /proc DIR"). */
static int take_positionals(struct fuse_args *args, struct options *o)
{
	const char *device = o->npositional == 2 ? o->positional[0] : NULL;
	const char *mountpoint = o->positional[o->npositional - 1];

	if (device && strcmp(device, "procfast") && strcmp(device, "none")) {
		if (device[0] != '/') {
			fprintf(stderr, "procfast: device %s: give procfast, none or a procfs path\n",
				device);
			return -1;
		}
		if (!o->source && !(o->source = strdup(device)))
			return -1;
	}
	return fuse_opt_add_arg(args, mountpoint);
}

static int timeout_valid(const char *name, double v)
{
	if (v >= 0 && v <= 3600)
		return 1;
	fprintf(stderr, "procfast: %s=%g: must be between 0 and 3600 seconds\n", name, v);
	return 0;
}

/* procfs's hidepid= values, by name or by number as mount(8) users give them. */
static int hidepid_level(const char *v)
{
	static const char *const names[] = { "off", "noaccess", "invisible", NULL, "ptraceable" };

	for (int i = 0; i < 5; i++)
		if (names[i] && (!strcmp(v, names[i]) || (v[0] == '0' + i && !v[1])))
			return i;
	return -1;
}

static int procfs_options_valid(struct options *o)
{
	char *end;

	if (o->hidepid && (o->hide_level = hidepid_level(o->hidepid)) < 0) {
		fprintf(stderr, "procfast: hidepid=%s: must be off, noaccess, invisible or ptraceable\n",
			o->hidepid);
		return 0;
	}
	if (o->subset && strcmp(o->subset, "pid")) {
		fprintf(stderr, "procfast: subset=%s: only subset=pid exists\n", o->subset);
		return 0;
	}
	if (o->gid && (*o->gid < '0' || *o->gid > '9' || strtoul(o->gid, &end, 10) > 0xfffffffeUL || *end)) {
		fprintf(stderr, "procfast: gid=%s: must be a numeric group id\n", o->gid);
		return 0;
	}
	return 1;
}

/* resources=: off by default on the host, init in a pidns= view. */
static int resources_valid(struct options *o)
{
	static const char *const names[] = { "off", "init", "caller" };

	o->res_mode = o->pidns ? RES_INIT : RES_OFF;
	if (!o->resources)
		return 1;
	for (int i = 0; i < 3; i++)
		if (!strcmp(o->resources, names[i])) {
			o->res_mode = i;
			return 1;
		}
	fprintf(stderr, "procfast: resources=%s: must be off, init or caller\n", o->resources);
	return 0;
}

/* auto_unmount's helper unmounts once the mount answers ENOTCONN, which a
 * dead daemon's connection answers at once only over /dev/fuse: the kernel
 * lets the rings of a dead one go in a worker after it was reaped, and
 * requests made meanwhile end ECONNABORTED (transport.h). */
static int uring_valid(struct options *o)
{
	o->uring_mode = o->uring ? transport_mode_of(o->uring) : URING_AUTO;
	if (o->uring_mode < 0) {
		fprintf(stderr, "procfast: uring=%s: must be auto, on or off\n", o->uring);
		return 0;
	}
	if (o->auto_unmount && o->uring_mode == URING_ON) {
		fprintf(stderr, "procfast: uring=on and auto_unmount exclude each other\n");
		return 0;
	}
	if (o->auto_unmount)
		o->uring_mode = URING_OFF;
	if (o->uring_threads < 1 || o->uring_threads > URING_THREADS_MAX) {
		fprintf(stderr, "procfast: uring_threads=%u: must be 1 to %d\n", o->uring_threads,
			URING_THREADS_MAX);
		return 0;
	}
	return 1;
}

/* Where the kernel cannot read a snapshot, the mount is refused rather
 * than served otherwise: the reader asked for the trade. */
static int snapshot_valid(const struct options *o)
{
	char why[160];

	if (!o->snapshot || passthrough_probe(why, sizeof(why)) == 0)
		return 1;
	fprintf(stderr, "procfast: snapshot needs FUSE passthrough: %s\n", why);
	return 0;
}

/* daemon= hands the mount over and exits: nothing of this process may be
 * needed by the mount afterwards. */
static int handover_options_valid(const struct options *o)
{
	const char *bad = o->control ? "control=" : o->no_restart ? "norestart"
			  : o->auto_unmount ? "auto_unmount" : NULL;

	if (o->daemon && bad) {
		fprintf(stderr, "procfast: daemon= and %s exclude each other\n", bad);
		return 0;
	}
	if (o->takeover && !o->control) {
		fprintf(stderr, "procfast: takeover needs control=SOCKET (where the daemon to succeed listens)\n");
		return 0;
	}
	if (o->control && o->no_restart) {
		fprintf(stderr, "procfast: control= needs the supervisor (not with norestart)\n");
		return 0;
	}
	return 1;
}

int options_parse(struct fuse_args *args, struct options *o)
{
	memset(o, 0, sizeof(*o));
	o->entry_timeout = 1.0;
	o->attr_timeout = 1.0;
	o->scan_ms = 100;
	o->uring_threads = URING_THREADS_DEFAULT;
	if (fuse_opt_parse(args, o, option_spec, option_key))
		return -1;
	if (o->npositional && take_positionals(args, o))
		return -1;
	if (!procfs_options_valid(o))
		return -1;
	if (o->events && strcmp(o->events, "on") && strcmp(o->events, "off")) {
		fprintf(stderr, "procfast: events=%s: must be on or off\n", o->events);
		return -1;
	}
	if (o->event_rcvbuf < 0) {
		fprintf(stderr, "procfast: event_rcvbuf=%d: must be positive\n", o->event_rcvbuf);
		return -1;
	}
	if (!timeout_valid("entry_timeout", o->entry_timeout) ||
	    !timeout_valid("attr_timeout", o->attr_timeout))
		return -1;
	if (!handover_options_valid(o) || !resources_valid(o) || !uring_valid(o))
		return -1;
	if (kernel_feature_disable(o->without) || !snapshot_valid(o))
		return -1;
	/* Tools run by every user read /proc: as root, serve them all. */
	if (geteuid() == 0 && !o->no_allow_other && !o->has_allow_other &&
	    fuse_opt_add_arg(args, "-oallow_other"))
		return -1;
	/* The kernel checks mode bits with the caller's own credentials before
	 * asking the daemon, as procfs does first; it is also what lets a pipe's
	 * fd target keep its FIFO type without hanging open() (see link.c). */
	if (fuse_opt_add_arg(args, "-ofsname=procfast,subtype=procfast,default_permissions"))
		return -1;
	return 0;
}

void options_free(struct options *o)
{
	free(o->source);
	free(o->events);
	free(o->pidns);
	free(o->hidepid);
	free(o->subset);
	free(o->gid);
	free(o->control);
	free(o->daemon);
	free(o->pidfile);
	free(o->resources);
	free(o->cgroup_root);
	free(o->uring);
	free(o->without);
	free(o->positional[0]);
	free(o->positional[1]);
}

void options_help(void)
{
	printf("procfast options:\n"
	       "    -o source=DIR          procfs to mirror (default /proc)\n"
	       "    -o ro                  refuse every write\n"
	       "    -o noallow_other       serve only the mounting user (default for root: all users)\n"
	       "    -o snapshot            each open of a file reads a snapshot made at the open,\n"
	       "                           as the opener (FUSE passthrough, Linux 6.9+): one round\n"
	       "                           trip less; a file held open and read again shows what\n"
	       "                           it showed at its open (not for top, free -s, sysinfo)\n"
	       "    -o nodedup             threads' fd/, fdinfo/ and task/ as directories, as in /proc\n"
	       "    -o nopoll              every file ready at once for poll and epoll (no POLL\n"
	       "                           requests: Go's open of a file makes one)\n"
	       "    -o entry_timeout=SECS  kernel cache lifetime of names that live as long as\n"
	       "                           their directory (default 1; pids, tids, fds: always 0)\n"
	       "    -o attr_timeout=SECS   kernel cache lifetime of attributes (default 1)\n"
	       "    -o events=on|off       follow process events (default on; off: list from scans)\n"
	       "    -o event_rcvbuf=BYTES  event socket buffer (default 8 MiB)\n"
	       "    -o scan_lifetime=MS    without events, how long a root scan serves (default 100)\n"
	       "    -o norestart           no supervisor: the mount ends with the daemon\n"
	       "    -o control=SOCKET      also serve mounts handed over at SOCKET (daemon=)\n"
	       "    -o daemon=SOCKET       mount, hand the mount to the daemon listening at\n"
	       "                           SOCKET (control=) and exit\n"
	       "    -o takeover            with control=: if a daemon listens at SOCKET, wait as\n"
	       "                           its successor and take its mounts over when it stops\n"
	       "                           (SIGTERM) or dies, without unmounting; else mount\n"
	       "    -o pidfile=FILE        write the supervisor's pid to FILE once it serves or\n"
	       "                           waits as a successor\n"
	       "    -o pidns=FILE          show that pid namespace (FILE: /proc/PID/ns/pid or a bind\n"
	       "                           of it), as a procfs mounted inside it would\n"
	       "    -o hidepid=off|noaccess|invisible|ptraceable, -o gid=GID, -o subset=pid\n"
	       "                           procfs's own options, with the kernel's meaning\n"
	       "    -o resources=off|init|caller\n"
	       "                           meminfo, cpuinfo, stat, uptime, loadavg, swaps and\n"
	       "                           diskstats from a cgroup: the view's pid 1's (init,\n"
	       "                           the default with pidns=), the caller's container's\n"
	       "                           (caller, as LXCFS), or the host's files (off, the\n"
	       "                           default otherwise)\n"
	       "    -o cgroup_root=DIR     read cgroups in DIR (a v2 tree, or one directory per\n"
	       "                           v1 controller) instead of the mounted hierarchies\n"
	       "    -o uring=auto|on|off   FUSE over io_uring: where the kernel allows it (auto,\n"
	       "                           the default), required (on), or never (off); allowed by\n"
	       "                           /sys/module/fuse/parameters/enable_uring\n"
	       "    -o uring_threads=N     threads serving each CPU's io_uring queue (default 4)\n"
	       "    -o max_handles_per_uid=N, -o max_handles_per_container=N\n"
	       "                           open files and directories one uid, one container (user\n"
	       "                           namespace, else pid namespace) may hold; past it, opens\n"
	       "                           fail with EMFILE (default: a quarter of the fd limit\n"
	       "                           less what the daemon keeps, max(256, limit/16))\n"
	       "    -o max_busy_per_uid=N  requests of one uid served at once by the /dev/fuse\n"
	       "                           workers (max_threads), or by one io_uring queue's\n"
	       "                           threads; past it, EINTR at once (default: half of\n"
	       "                           the workers, all but one of a queue's threads)\n"
	       "    -o without=NAME[:NAME...]\n"
	       "                           behave as on a kernel without these interfaces, to\n"
	       "                           test the fallbacks: pidfs, pid_ioctl, event_filter,\n"
	       "                           passthrough\n");
}
