#!/bin/sh
# Builds the RPM from this checkout: makes procfast-VERSION.tar.gz from the
# files git tracks and runs rpmbuild -bb packaging/procfast.spec in a
# scratch topdir (default build-rpm/); prints the path of the .rpm.
# Where the systemd RPM macros are missing (Debian's rpm, for checking the
# spec), it defines stand-ins and skips the BuildRequires check, which would
# look in an empty RPM database.
set -eu
cd "$(dirname "$0")/.."
top=$PWD/${1:-build-rpm}
version=$(sed -n 's/^project(procfast VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
spec_version=$(rpmspec -q --srpm --qf '%{VERSION}' packaging/procfast.spec 2>/dev/null)
if [ "$version" != "$spec_version" ]; then
	echo "build-rpm.sh: CMakeLists.txt has $version, procfast.spec $spec_version" >&2
	exit 1
fi
if [ -d "$top" ] && [ ! -d "$top/SOURCES" ] && [ -n "$(ls -A "$top")" ]; then
	echo "build-rpm.sh: $top is not an rpmbuild directory: not removing it" >&2
	exit 1
fi
rm -rf "$top"
mkdir -p "$top/SOURCES"
git ls-files -z | tar --null -T - --transform "s,^,procfast-$version/," -czf "$top/SOURCES/procfast-$version.tar.gz"

set -- --define "_topdir $top"
if [ -z "$(rpm --eval '%{?_unitdir}')" ]; then
	set -- "$@" --nodeps \
		--define '_unitdir /usr/lib/systemd/system' \
		--define 'systemd_post() if [ $1 -eq 1 ] && [ -d /run/systemd/system ]; then systemctl --no-reload preset %{*} || :; fi' \
		--define 'systemd_preun() if [ $1 -eq 0 ] && [ -d /run/systemd/system ]; then systemctl --no-reload disable --now %{*} || :; fi' \
		--define 'systemd_postun() if [ $1 -ge 1 ] && [ -d /run/systemd/system ]; then systemctl daemon-reload || :; fi'
fi
rpmbuild -bb "$@" packaging/procfast.spec >"$top/rpmbuild.log" 2>&1 || {
	tail -30 "$top/rpmbuild.log" >&2
	exit 1
}
ls "$top"/RPMS/*/procfast-"$version"-*.rpm
