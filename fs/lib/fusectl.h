/* fusectl: the kernel's directory of FUSE connections, one directory a
 * connection, named by its device number (the kernel's dev_t: major << 20 |
 * minor), with the connection's abort file in it. */
#ifndef PROCFAST_FUSECTL_H
#define PROCFAST_FUSECTL_H

/* An fd of fusectl's root: a mount of its own, attached nowhere, so that it
 * is there whatever the host mounted (a host without systemd, a container
 * whose /sys has none; it takes CAP_SYS_ADMIN, so the first call should come
 * before privileges are dropped); else the host's /sys/fs/fuse/connections.
 * Opened once a process (and inherited by its forks); -errno where neither
 * can be had. */
int fusectl_dir(void);

#endif
