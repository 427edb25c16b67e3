"""The unprivileged uids the tests act as."""

NOBODY = 65534
OTHER = 23456          # a second unprivileged uid, owns a process the test starts
