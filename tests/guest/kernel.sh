# shellcheck shell=bash
# Sourced by tests/guest/run: what the guest needs on this machine. guest_prepare
# installs qemu, a static busybox and kmod (depmod here, modprobe in the guest), and fetches and unpacks the kernel into
# $CACHE once (later runs reuse it, without the network); guest_initramfs builds
# the busybox initramfs that mounts this machine's root and hands over to
# tests/guest/init.

apt_updated=
apt_update_once() {
	[ -n "$apt_updated" ] && return 0
	apt-get update -qq >/dev/null || return 1
	apt_updated=1
}

# The newest linux-image-6.1.0-N-amd64 Debian has (the signed image: it carries
# the same vmlinuz and modules).
newest_kernel_package() {
	apt-cache search --names-only '^linux-image-6\.1\.0-[0-9]+-amd64$' 2>/dev/null |
		awk '{print $1}' | sort -V | tail -n 1
}

guest_install_tools() {
	local p missing=
	for p in qemu-system-x86 busybox-static kmod; do
		dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
	done
	[ -z "$missing" ] && return 0
	apt_update_once || return 1
	local log
	# shellcheck disable=SC2086 # a list of names
	log=$(DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing 2>&1) ||
		{ echo "$log" >&2; return 1; }
}

# A kernel already unpacked in the cache: the newest with its mark of completion.
cached_kernel() {
	local d
	for d in "$CACHE"/linux-image-6.1.0-*-amd64; do
		[ -e "$d/ready" ] && basename "$d"
	done | sort -V | tail -n 1
}

guest_fetch_kernel() {
	local pkg tmp
	pkg=$(cached_kernel)
	if [ -z "$pkg" ]; then
		pkg=$(newest_kernel_package)
		if [ -z "$pkg" ]; then
			apt_update_once || return 1
			pkg=$(newest_kernel_package)
		fi
		[ -n "$pkg" ] || { echo "guest: no linux-image-6.1.0-*-amd64 in Debian's packages" >&2; return 1; }
		tmp=$(mktemp -d "$CACHE/.fetch.XXXXXX") || return 1
		# Lists older than the archive name a package it no longer has: update, then again.
		if ! (cd "$tmp" && apt-get download -q "$pkg" >/dev/null 2>&1) && [ -z "$apt_updated" ]; then
			apt_update_once && pkg=$(newest_kernel_package)
			(cd "$tmp" && apt-get download -q "$pkg" >/dev/null 2>&1)
		fi
		if ! (cd "$tmp" && dpkg-deb -x ./*.deb "$pkg" && rm -f ./*.deb); then
			rm -rf "$tmp"
			echo "guest: fetching $pkg failed" >&2
			return 1
		fi
		# The package leaves modules.dep to its postinst: made here, so that the
		# guest's modprobe finds what the kernel asks for later.
		depmod -b "$tmp/$pkg" "$(ls "$tmp/$pkg/lib/modules")" || { rm -rf "$tmp"; return 1; }
		cp "$tmp/$pkg"/boot/vmlinuz-* "$tmp/$pkg/vmlinuz"
		rm -rf "${CACHE:?}/$pkg"
		mv "$tmp/$pkg" "$CACHE/$pkg" && touch "$CACHE/$pkg/ready"
		rm -rf "$tmp"
	fi
	KDIR=$CACHE/$pkg
	KVER=$(ls "$KDIR/lib/modules")
}

guest_prepare() {
	mkdir -p "$CACHE" || return 1
	# Concurrent runners: one installs and fetches, the others wait for it.
	exec 9>"$CACHE/.lock"
	flock 9
	guest_install_tools || { echo "guest: installing qemu-system-x86 busybox-static failed" >&2; flock -u 9; return 1; }
	guest_fetch_kernel
	local rc=$?
	flock -u 9
	exec 9>&-
	return $rc
}

# The initramfs (dir, cpio): busybox, the modules of $MODULES, and an /init
# that loads them, mounts the root and the job's share, and switches root.
guest_initramfs() {
	local dir=$1 out=$2 m f
	mkdir -p "$dir"/{bin,dev,proc,sys,newroot,lib/modules} || return 1
	cp /bin/busybox "$dir/bin/busybox" || return 1
	for m in $MODULES; do
		f=$(find "$KDIR/lib/modules/$KVER/kernel" -name "$m.ko" -print -quit)
		[ -n "$f" ] || { echo "guest: no module $m in $KVER" >&2; return 1; }
		cp "$f" "$dir/lib/modules/"
	done
	# shellcheck disable=SC2086,SC2116 # \$MODULES on one line
	cat >"$dir/init" <<INIT
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
fail() { echo "guest initramfs: \$*"; echo o >/proc/sysrq-trigger; sleep 60; }
for m in $(echo $MODULES); do insmod /lib/modules/\$m.ko || fail "insmod \$m"; done
mount -t 9p -o ro,trans=virtio,version=9p2000.L,msize=262144,cache=loose host /newroot || fail "mounting the root"
mount -t tmpfs -o mode=755 run /newroot/run || fail "tmpfs on /run"
mkdir /newroot/run/procfast-guest
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 job /newroot/run/procfast-guest || fail "mounting the job's share"
for a in \$(cat /proc/cmdline); do case \$a in guest.init=*) init=\${a#guest.init=} ;; esac; done
mount --move /dev /newroot/dev
umount /sys /proc
exec switch_root /newroot /bin/bash "\$init" $KVER $KDIR
INIT
	chmod +x "$dir/init"
	(cd "$dir" && find . | busybox cpio -o -H newc 2>/dev/null) >"$out"
}
