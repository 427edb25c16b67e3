"""What the running kernel has, by its release."""
import platform


def kernel_at_least(major, minor):
    release = platform.release().split("-")[0].split(".")
    return (int(release[0]), int(release[1])) >= (major, minor)


def has_fuse_passthrough():
    """FUSE passthrough, for -o snapshot (Linux 6.9)."""
    return kernel_at_least(6, 9)
