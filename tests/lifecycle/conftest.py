"""The lifecycle group's fixtures: a daemon that serves mounts handed over to it
(lib/control.py, shared with the transport group)."""
from lib.control import daemon  # noqa: F401 (the fixture)
