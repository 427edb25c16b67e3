"""The machine's switch for FUSE over io_uring: the transport tests set it per test
(tests/run sets it per run, and puts the machine's value back)."""

PARAM = "/sys/module/fuse/parameters/enable_uring"
