"""tests/source/check_layers.py: the include graph keeps the layers (no mount)."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import check_layers  # noqa: E402

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")


def write(tree, files):
    for path, includes in files.items():
        full = tree / path
        full.parent.mkdir(parents=True, exist_ok=True)
        full.write_text("".join(f'#include "{i}"\n' for i in includes))


def test_the_tree_keeps_its_layers():
    assert check_layers.faults(ROOT) == []


def test_a_circle_within_a_folder_is_found(tmp_path):
    write(tmp_path, {"fs/request/a.c": ["fs/request/a.h", "fs/request/b.h"], "fs/request/a.h": [],
                     "fs/request/b.c": ["fs/request/b.h", "fs/request/a.h"], "fs/request/b.h": []})
    assert check_layers.faults(str(tmp_path)) == ["include circle: fs/request/a -> fs/request/b"]


def test_an_include_from_a_lower_layer_up_is_found(tmp_path):
    write(tmp_path, {"fs/lib/log.c": ["fs/request/ops.h"], "fs/request/ops.h": []})
    assert check_layers.faults(str(tmp_path)) == [
        "fs/lib/log includes fs/request/ops: fs/request is above fs/lib"]


def test_a_folder_without_a_layer_is_found(tmp_path):
    write(tmp_path, {"fs/misc/x.c": []})
    assert check_layers.faults(str(tmp_path)) == [
        "fs/misc/x: in a folder no layer places (tests/source/check_layers.py LAYERS)"]


def test_includes_downward_pass(tmp_path):
    write(tmp_path, {"fs/daemon/main.c": ["fs/request/ops.h", "fs/lib/log.h"],
                     "fs/request/ops.h": ["fs/lib/log.h"], "fs/lib/log.h": []})
    assert check_layers.faults(str(tmp_path)) == []
