#include "fs/daemon/privileges.h"

#include <errno.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/keyctl.h>

#include "fs/caller/caller.h"
#include "fs/lib/log.h"

static const cap_value_t kept[] = { PROCFAST_KEPT_CAPS };

/* The kept capabilities the daemon holds, as permitted and effective; the
 * inheritable set stays empty. */
static cap_t kept_of(cap_t now)
{
	cap_t want = cap_init();

	for (size_t i = 0; want && i < sizeof(kept) / sizeof(kept[0]); i++) {
		cap_flag_value_t has = CAP_CLEAR;

		if (!CAP_IS_SUPPORTED(kept[i]) || cap_get_flag(now, kept[i], CAP_PERMITTED, &has) ||
		    has != CAP_SET)
			continue;
		if (cap_set_flag(want, CAP_PERMITTED, 1, &kept[i], CAP_SET) ||
		    cap_set_flag(want, CAP_EFFECTIVE, 1, &kept[i], CAP_SET)) {
			cap_free(want);
			return NULL;
		}
	}
	return want;
}

/* Empties the bounding set (needs CAP_SETPCAP, kept): no later execve could
 * regain what was dropped. */
static int clear_bounding(void)
{
	for (cap_value_t c = 0; CAP_IS_SUPPORTED(c); c++)
		if (cap_drop_bound(c) && errno != EINVAL)
			return -errno;
	return 0;
}

static int has_any_permitted(cap_t now)
{
	for (cap_value_t c = 0; CAP_IS_SUPPORTED(c); c++) {
		cap_flag_value_t has = CAP_CLEAR;

		if (!cap_get_flag(now, c, CAP_PERMITTED, &has) && has == CAP_SET)
			return 1;
	}
	return 0;
}

static int drop(cap_t now)
{
	cap_t want;
	int r;

	if (cap_reset_ambient())
		return -errno;
	if (!(want = kept_of(now)))
		return -ENOMEM;
	r = cap_set_proc(want) ? -errno : 0;
	cap_free(want);
	if (r)
		return r;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -errno;
	/* Worker threads take the caller's capabilities within the new
	 * permitted set (capset refuses anything beyond it). */
	return caller_caps_reload();
}

/* A daemon without capabilities (a user's own mount) has nothing to give
 * up; no_new_privs would only stop its unmount, which runs the set-user-ID
 * fusermount3. */
static int if_privileged(int (*step)(cap_t now), const char *what)
{
	cap_t now = cap_get_proc();
	int r;

	if (!now)
		return -errno;
	r = has_any_permitted(now) ? step(now) : 0;
	cap_free(now);
	if (r)
		log_err("cannot %s: %s", what, strerror(-r));
	return r;
}

int privileges_drop(void)
{
	return if_privileged(drop, "drop capabilities");
}

static int seal(cap_t now)
{
	(void)now;
	return clear_bounding();
}

int privileges_seal(void)
{
	return if_privileged(seal, "empty the bounding set");
}

int privileges_drop_keyrings(void)
{
	long serial = syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, NULL);

	if (serial < 0)
		return -errno;
	return syscall(SYS_keyctl, KEYCTL_SETPERM, serial, 0) ? -errno : 0;
}
