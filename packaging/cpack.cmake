# The Debian package (CPack DEB): packaging/build-deb.sh configures with
# CMAKE_INSTALL_PREFIX=/usr and runs cpack. It installs what "cmake --install"
# installs: /usr/sbin/procfast, the container helpers beside it
# (procfast-attach, procfast-enter, procfast-oci-hook), the man page, the
# systemd unit and the examples (hooks.d entries, a compose file); the
# maintainer scripts in packaging/deb/ enable, start, stop and unmount it.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME procfast)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "procfast maintainers <maintainers@users.noreply.a-seed-1a715d2d.example>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "FUSE mirror of /proc that lists processes without walking threads")
# The extended description, after the summary (CPack indents it).
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION "procfast mirrors a procfs: the same bytes, listings, link texts, attributes
and permissions. The root listing comes from an index of thread-group leaders
kept current by process events, and threads sharing the leader's file table
link to its fd/ instead of repeating it. Mount it with
mount -t fuse procfast /run/procfast, or start procfast.service, and bind it
over /proc or at /host/proc for ps, top, lsof and monitoring agents.")
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT) # procfast_VERSION_ARCH.deb
set(CPACK_PACKAGING_INSTALL_PREFIX ${CMAKE_INSTALL_PREFIX})
# fuse3 for /dev/fuse's helpers (mount.fuse3, fusermount3); the libraries are
# found by dpkg-shlibdeps and added to Depends.
set(CPACK_DEBIAN_PACKAGE_DEPENDS "fuse3")
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
  ${CMAKE_CURRENT_LIST_DIR}/deb/postinst
  ${CMAKE_CURRENT_LIST_DIR}/deb/prerm
  ${CMAKE_CURRENT_LIST_DIR}/deb/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
