"""The mirror group's fixtures."""
import pytest

from lib.mount import Mount


@pytest.fixture(scope="module")
def kernel_layout_mnt():
    """A mount with the kernel's exact layout: threads' fd/, fdinfo/ and net/ are
    directories (-o nodedup). The default layout, where they link to the leader's, is
    compared in test_dedup.py."""
    m = Mount(["nodedup"])
    yield m
    m.close()
