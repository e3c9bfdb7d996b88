"""Security properties of seglog (issue 8).

* No topic name escapes the data directory: ``create_topic`` with any name either raises
  ``InvalidTopicError`` or creates exactly one partition directory *directly* inside the data
  directory; a hostile name in ``seglog-topics.json`` makes the open fail with a typed error
  and creates nothing.
* The directory lock keeps a second process out: a real second interpreter opening the same
  data directory fails with ``LogDirectoryLockedError`` while the first holds it, and gets in
  once it closed.
* Nothing unpickles untrusted data: an AST scan of ``src/seglog`` finds no call of
  ``pickle``/``cPickle``/``dill``/``cloudpickle``/``marshal``/``shelve`` loaders,
  ``yaml.load``/``yaml.unsafe_load``, ``eval``, ``exec`` or ``__import__``, and no import of
  those modules, outside :data:`TRUSTED`. ``seglog.spark`` is trusted: PySpark ships its
  objects (data source readers, partitions) between its *own* driver and executor processes
  with its bundled cloudpickle; seglog never unpickles bytes from a data directory or input.
* Files and directories are created with the process umask: with ``umask 0o027`` a process
  that creates a topic, appends, rolls, cleans, compacts, checkpoints and closes leaves only
  ``0o640`` files and ``0o750`` directories.
"""

from __future__ import annotations

import ast
import json
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import seglog
from seglog.engine.log_manager import open_log_dirs
from seglog.errors import InvalidTopicError, LogDirectoryLockedError

SRC = Path(seglog.__file__).parent

# Modules allowed to use a deserializer or dynamic evaluation, and why (see the docstring).
TRUSTED = {
    "seglog/spark": "PySpark pickles objects between its own driver and executors (trusted)",
}
UNSAFE_MODULES = {"pickle", "cPickle", "_pickle", "dill", "cloudpickle", "marshal", "shelve"}
UNSAFE_CALLS = {
    ("yaml", "load"),
    ("yaml", "unsafe_load"),
    ("yaml", "full_load"),
    ("yaml", "load_all"),
    ("yaml", "unsafe_load_all"),
}
UNSAFE_BUILTINS = {"eval", "exec", "__import__", "compile"}


# --- topic names and paths -------------------------------------------------------------------
@settings(max_examples=60, deadline=None)
@given(
    st.text(min_size=0, max_size=260)
    | st.sampled_from(["..", ".", "../x", "a/b", "/etc", "a\\b", "x\x00", "~", "..."])
)
def test_no_topic_name_escapes_the_data_directory(
    tmp_path_factory: pytest.TempPathFactory, name: str
) -> None:
    root = tmp_path_factory.mktemp("names")
    data = root / "data"
    with open_log_dirs([data]) as manager:
        try:
            manager.create_topic(name, 1)
        except InvalidTopicError:
            pass
        else:
            [created] = [p for p in data.iterdir() if p.is_dir()]
            assert created.resolve().parent == data.resolve()
            assert created.name == f"{name}-0"
    outside = [p for p in root.iterdir() if p != data]
    assert outside == [], outside


@pytest.mark.parametrize("hostile", ["../escaped", "a/../../b", "/tmp/abs", ".."])
def test_a_hostile_name_in_the_topics_file_is_refused(tmp_path: Path, hostile: str) -> None:
    data = tmp_path / "data"
    with open_log_dirs([data]) as manager:
        manager.create_topic("good", 1)
    topics_path = data / "seglog-topics.json"
    body = json.loads(topics_path.read_text())
    body["topics"][hostile] = dict(body["topics"]["good"])
    body["generation"] += 1
    topics_path.write_text(json.dumps(body))
    before = set(tmp_path.rglob("*"))
    with pytest.raises(InvalidTopicError, match="is illegal"):
        open_log_dirs([data])
    # Nothing was created (only the clean-shutdown marker was taken: the next open recovers).
    assert set(tmp_path.rglob("*")) - before == set()


# --- the directory lock, with a real second process ------------------------------------------
SECOND_PROCESS = textwrap.dedent(
    """
    import sys
    from seglog.engine.log_manager import open_log_dirs
    from seglog.errors import LogDirectoryLockedError
    try:
        open_log_dirs([sys.argv[1]]).close()
    except LogDirectoryLockedError as exc:
        print("locked:", exc.path)
        sys.exit(3)
    print("opened")
    """
)


def test_the_directory_lock_keeps_a_second_process_out(tmp_path: Path) -> None:
    data = tmp_path / "data"
    argv = [sys.executable, "-c", SECOND_PROCESS, str(data)]
    with open_log_dirs([data]) as manager:
        manager.create_topic("t", 1)
        second = subprocess.run(argv, check=False, capture_output=True, text=True, timeout=120)
        assert second.returncode == 3, second.stderr
        assert second.stdout.strip() == f"locked: {data / '.lock'}"
        assert manager.get_log("t", 0).append_records([(b"k", b"v")]).first_offset == 0
    second = subprocess.run(argv, check=False, capture_output=True, text=True, timeout=120)
    assert (second.returncode, second.stdout.strip()) == (0, "opened"), second.stderr


def test_the_directory_lock_keeps_a_second_manager_of_the_same_process_out(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    with open_log_dirs([data]), pytest.raises(LogDirectoryLockedError):
        open_log_dirs([data]).close()


# --- no deserialization of untrusted data ----------------------------------------------------
def unsafe_uses(path: Path, root: Path = SRC.parent) -> list[str]:
    """Every import of an unsafe module and call of an unsafe function in ``path``."""
    tree = ast.parse(path.read_text("utf-8"), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.split(".")[0] in UNSAFE_MODULES]
        elif isinstance(node, ast.ImportFrom):
            module = (node.module or "").split(".")[0]
            if module in UNSAFE_MODULES:
                found.append(f"from {node.module}")
            if module == "yaml" and any(("yaml", a.name) in UNSAFE_CALLS for a in node.names):
                found.append("from yaml import load")
        elif isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) and func.id in UNSAFE_BUILTINS:
                found.append(f"{func.id}()")
            elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
                pair = (func.value.id, func.attr)
                if pair in UNSAFE_CALLS or func.value.id in UNSAFE_MODULES:
                    found.append(f"{func.value.id}.{func.attr}()")
    return [f"{path.relative_to(root)}:{use}" for use in found]


def test_scanner_sees_unsafe_calls(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import pickle\nfrom marshal import loads\nimport yaml\n"
        "pickle.loads(b'')\nyaml.load('x')\neval('1')\n"
    )
    uses = [u.split(":", 1)[1] for u in unsafe_uses(probe, tmp_path)]
    assert sorted(uses) == sorted(
        ["pickle", "from marshal", "pickle.loads()", "yaml.load()", "eval()"]
    )


def test_nothing_unpickles_or_evaluates_untrusted_data() -> None:
    found = []
    for path in sorted(SRC.rglob("*.py")):
        relative = path.relative_to(SRC.parent).as_posix()
        if any(relative.startswith(prefix + "/") for prefix in TRUSTED):
            continue
        found += unsafe_uses(path)
    assert found == [], found


# --- file modes follow the umask -------------------------------------------------------------
UMASK_PROCESS = textwrap.dedent(
    """
    import os, sys
    os.umask(0o027)
    from seglog.engine.log_manager import open_log_dirs
    with open_log_dirs([sys.argv[1]]) as manager:
        manager.create_topic("kv", 1, {"cleanup.policy": "compact", "segment.bytes": "400",
                                       "min.cleanable.dirty.ratio": "0.01"})
        manager.create_topic("events", 2, {"segment.bytes": "300", "retention.bytes": "600"})
        kv = manager.get_log("kv", 0)
        for i in range(40):
            kv.append_records([(b"k%d" % (i % 5), b"v%d" % i)])
            manager.get_log("events", i % 2).append_records([(None, b"e" * 50)])
        manager.run_retention()
        manager.clean_once()
        manager.compact("kv")
        manager.checkpoint_all()
    """
)


def test_files_are_created_with_the_process_umask(tmp_path: Path) -> None:
    data = tmp_path / "data"
    subprocess.run(
        [sys.executable, "-c", UMASK_PROCESS, str(data)], check=True, timeout=120, text=True
    )
    modes = {}
    for path in [data, *data.rglob("*")]:
        mode = stat.S_IMODE(path.lstat().st_mode)
        modes[str(path.relative_to(tmp_path))] = (path.is_dir(), oct(mode))
    wrong = {
        name: mode
        for name, (is_dir, mode) in modes.items()
        if mode != (oct(0o750) if is_dir else oct(0o640))
    }
    assert wrong == {}, wrong
    names = {Path(n).name for n in modes}
    # What the process created: every kind of file seglog writes.
    assert {".lock", "meta.properties", "seglog-topics.json", "cleaner-offset-checkpoint"} <= names
    assert any(n.endswith(".log") for n in names) and any(n.endswith(".index") for n in names)
    assert any("compaction" in n for n in modes), sorted(modes)
