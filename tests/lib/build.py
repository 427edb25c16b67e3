"""Where the build under test is: the daemon (PROCFAST_BIN) and the test helpers
(PROCFAST_HELPERS, build/tests by default)."""
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("PROCFAST_BIN", os.path.join(ROOT, "build", "procfast"))
HELPERS = os.environ.get("PROCFAST_HELPERS", os.path.join(os.path.dirname(BIN), "tests"))
