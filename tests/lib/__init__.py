"""What the test groups share (tests/README.md): import as lib.NAME."""
