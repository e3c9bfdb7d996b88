"""Reads never write (issue 16): every command that only reads leaves every byte of a real
broker's log directory as it was, alone and while a writer holds the directory's lock; an
unclean directory is recovered in memory only ("would truncate"); a command that writes fails
at once on a locked directory, naming the holder; and a read-write open + close leaves the
broker's ``.kafka_cleanshutdown``, ``meta.properties`` and ``partition.metadata`` byte for byte.

Every test works on a writable copy of the corpus (``/work/shared/corpus/broker/*``), never on
the corpus itself.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from cli_support import Cli

from corpus_location import NO_CORPUS_REASON, corpus_root
from seglog.engine.log_manager import open_log_dirs
from seglog.format.checkpoint import encode_clean_shutdown
from seglog.storage.log_dir import CLEAN_SHUTDOWN_FILE, META_PROPERTIES
from seglog.storage.partition_dirs import PARTITION_METADATA

pytestmark = pytest.mark.compat

SRC = Path(__file__).resolve().parents[2] / "src"


def _broker_sources() -> list[object]:
    root = corpus_root()
    broker = None if root is None else root / "broker"
    if broker is None or not broker.is_dir():
        return [pytest.param(None, id="no-corpus", marks=pytest.mark.skip(reason=NO_CORPUS_REASON))]
    return [pytest.param(d, id=d.name) for d in sorted(broker.iterdir()) if d.is_dir()]


def writable_copy(source: Path, target: Path) -> Path:
    """``source`` copied to ``target`` with every directory and file made writable."""
    shutil.copytree(source, target)
    for dirpath, _, files in os.walk(target):
        os.chmod(dirpath, 0o755)
        for name in files:
            os.chmod(os.path.join(dirpath, name), 0o644)
    return target


def log_dir_roots(copy: Path) -> list[Path]:
    """The log directory roots of a copy: the parents of partition directories."""
    return sorted({p.parent.parent for p in copy.rglob("*.log")})


def fingerprint(root: Path) -> tuple[frozenset[str], dict[str, str]]:
    """Every name below ``root`` (directories too) and every file's sha256."""
    names = frozenset(str(p.relative_to(root)) for p in root.rglob("*"))
    digests = {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in root.rglob("*")
        if p.is_file()
    }
    return names, digests


def topics_of(cli: Cli, root: Path) -> list[str]:
    listing = cli.run("--data-dir", root, "topics", "list", "--json", data_dir=False)
    assert listing.status == 0, listing.err
    return [t["name"] for t in json.loads(listing.out)["topics"]]


def read_commands(root: Path, topics: list[str], out_dir: Path) -> list[list[str | Path]]:
    """Every command that only reads, for every topic of ``root`` (``out_dir``: the report's
    page, outside the log directory)."""
    commands: list[list[str | Path]] = [
        ["topics", "list"],
        ["topics", "list", "--json"],
        ["log-dirs", "describe"],
        ["report", "--out", out_dir / "report.html"],
        ["metrics"],
        ["cleaner", "status"],
        ["retention", "--once", "--dry-run"],
        ["clean", "--dry-run"],
    ]
    segment_files = [*sorted(root.rglob("*.log")), *sorted(root.rglob("*.index"))]
    if segment_files:  # (a writer's open removes a "-delete" directory, maybe the only one)
        commands.append(["dump-log", *segment_files])
    for topic in topics:
        commands += [
            ["topics", "describe", topic],
            ["consume", topic, "--format", "json"],
            ["verify", topic],
            ["compaction-status", topic],
        ]
    return commands


def run_reads(cli: Cli, root: Path, topics: list[str], out_dir: Path) -> list[str]:
    """Run every read command against ``root``; returns their stderr texts. Fails on a status
    meaning an error (verify's 1 reports findings of damaged data and is allowed)."""
    errors = []
    for command in read_commands(root, topics, out_dir):
        result = cli.run("--data-dir", root, *command, data_dir=False)
        allowed = (0, 1) if command[0] in ("verify", "dump-log") else (0,)
        assert result.status in allowed, (root, command, result.err)
        assert "error: log directory" not in result.err, (command, result.err)
        errors.append(result.err)
    return errors


@contextmanager
def writer_holding(root: Path) -> Iterator[subprocess.Popen[str]]:
    """A separate process holding ``root`` open read-write (its lock taken) until the block
    ends; it then closes the manager cleanly."""
    script = (
        "import sys\n"
        "from seglog.engine.log_manager import open_log_dirs\n"
        "manager = open_log_dirs([sys.argv[1]])\n"
        "print('ready', flush=True)\n"
        "sys.stdin.readline()\n"
        "manager.close()\n"
    )
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    process = subprocess.Popen(
        [sys.executable, "-c", script, str(root)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line == "ready\n", process.stderr.read() if process.stderr else line
        yield process
    finally:
        if process.stdin is not None:
            process.stdin.close()
        process.wait(timeout=60)


@pytest.mark.parametrize("source", _broker_sources())
def test_read_commands_leave_every_byte_alone(cli: Cli, tmp_path: Path, source: Path) -> None:
    copy = writable_copy(source, tmp_path / "copy")
    roots = log_dir_roots(copy)
    assert roots
    for root in roots:
        topics = topics_of(cli, root)
        before = fingerprint(copy)
        run_reads(cli, root, topics, tmp_path)
        assert fingerprint(copy) == before, root
        assert not (root / ".lock").exists(), "a read took the lock"


@pytest.mark.parametrize("source", _broker_sources())
def test_read_commands_work_and_write_nothing_while_a_writer_holds_the_lock(
    cli: Cli, tmp_path: Path, source: Path
) -> None:
    copy = writable_copy(source, tmp_path / "copy")
    for root in log_dir_roots(copy):
        topics = topics_of(cli, root)
        with writer_holding(root):
            before = fingerprint(copy)  # after the writer's own open (marker taken, .lock)
            assert (root / ".lock").exists()
            run_reads(cli, root, topics, tmp_path)
            assert fingerprint(copy) == before, root


def _unclean_copy_with_corrupt_tail(tmp_path: Path) -> tuple[Path, Path, int, int]:
    """The KRaft broker's copy without its clean-shutdown marker and with 60 bytes of garbage
    after the last batch of ``_schemas-0``'s active segment: (root, segment, size, garbage)."""
    root = corpus_root()
    source = None if root is None else root / "broker" / "itumelengmogase-cp-kraft"
    if source is None or not source.is_dir():
        pytest.skip(NO_CORPUS_REASON)
    copy = writable_copy(source, tmp_path / "copy")
    (copy / CLEAN_SHUTDOWN_FILE).unlink()
    active = sorted((copy / "_schemas-0").glob("*.log"))[-1]
    size = active.stat().st_size
    garbage = 60
    with active.open("ab") as handle:
        handle.write(b"\xff" * garbage)  # a batch header with a nonsense length: a corrupt tail
    return copy, active, size, garbage


def test_unclean_directory_read_reports_would_truncate_and_writes_nothing(
    cli: Cli, tmp_path: Path
) -> None:
    copy, active, size, garbage = _unclean_copy_with_corrupt_tail(tmp_path)
    before = fingerprint(copy)
    result = cli.run("--data-dir", copy, "consume", "_schemas", "--format", "json", data_dir=False)
    assert result.status == 0, result.err
    assert json.loads(result.lines[-1])["offset"] >= 0  # read around the bad tail
    line = next(x for x in result.err.splitlines() if "_schemas-0" in x)
    assert f"would truncate {garbage} bytes" in line, result.err
    assert "nothing written" in line, result.err
    assert "truncated" not in result.err, result.err
    # every other read command too, and --read-only changes nothing about it
    run_reads(cli, copy, topics_of(cli, copy), tmp_path)
    again = cli.run("--read-only", "--data-dir", copy, "topics", "list", data_dir=False)
    assert again.status == 0 and f"would truncate {garbage} bytes" in again.err, again.err
    assert fingerprint(copy) == before
    assert active.stat().st_size == size + garbage


def test_write_command_on_a_locked_directory_names_the_holder_and_the_read_way(
    cli: Cli, tmp_path: Path
) -> None:
    copy, _, _, _ = _unclean_copy_with_corrupt_tail(tmp_path)
    with writer_holding(copy) as writer:
        before = fingerprint(copy)
        started = time.monotonic()
        result = cli.run(
            "--lock-wait-ms", "0", "--data-dir", copy, "produce", "_schemas",
            stdin=b"one\n", data_dir=False,
        )  # fmt: skip
        assert time.monotonic() - started < 10, "--lock-wait-ms 0: a locked directory fails at once"
        assert result.status == 1
        assert f"is locked by process {writer.pid} (" in result.err, result.err
        assert "open_log_dirs" in result.err, result.err  # the holder's command line
        assert "Commands that only read" in result.err and "take no lock" in result.err
        retention = cli.run(
            "--lock-wait-ms", "0", "--data-dir", copy, "retention", "--once", data_dir=False
        )
        assert retention.status == 1 and f"process {writer.pid}" in retention.err
        assert fingerprint(copy) == before


def test_read_only_option_is_refused_by_commands_that_write(cli: Cli, tmp_path: Path) -> None:
    copy, _, _, _ = _unclean_copy_with_corrupt_tail(tmp_path)
    before = fingerprint(copy)
    result = cli.run(
        "--read-only", "--data-dir", copy, "produce", "_schemas", stdin=b"x\n", data_dir=False
    )
    assert result.status == 1
    assert "--read-only: this command changes data" in result.err, result.err
    assert fingerprint(copy) == before


@pytest.mark.parametrize("source", _broker_sources())
def test_read_write_open_and_close_keeps_the_broker_files(tmp_path: Path, source: Path) -> None:
    copy = writable_copy(source, tmp_path / "copy")
    for root in log_dir_roots(copy):
        kept = [root / CLEAN_SHUTDOWN_FILE, root / META_PROPERTIES]
        # (a "-delete" directory is one Kafka removes at start: not kept, by Kafka either)
        kept += [p for p in root.glob(f"*/{PARTITION_METADATA}") if "-delete" not in p.parent.name]
        kept = [path for path in kept if path.exists()]
        before = {path: path.read_bytes() for path in kept}
        had_marker = (root / CLEAN_SHUTDOWN_FILE).exists()
        open_log_dirs([root]).close()  # no data change
        for path, data in before.items():
            assert path.read_bytes() == data, path
        if not had_marker:  # no broker epoch known: Kafka's "unknown" (-1)
            assert (root / CLEAN_SHUTDOWN_FILE).read_bytes() == encode_clean_shutdown(-1)


def test_broker_epoch_survives_a_read_write_open_and_close(tmp_path: Path) -> None:
    root = tmp_path / "d"
    open_log_dirs([root]).close()
    marker = root / CLEAN_SHUTDOWN_FILE
    marker.write_bytes(b'{"version":0,"brokerEpoch":53326}')
    with open_log_dirs([root]) as manager:
        manager.create_topic("t", 1)
    assert marker.read_bytes() == b'{"version":0,"brokerEpoch":53326}'
    marker.write_bytes(b"")  # a pre-3.7 broker's marker stays empty
    open_log_dirs([root]).close()
    assert marker.read_bytes() == b""
    marker.write_bytes(b"not json")  # damage is not copied: epoch unknown
    open_log_dirs([root]).close()
    assert marker.read_bytes() == encode_clean_shutdown(-1)


def test_reads_succeed_while_a_writer_rolls_and_deletes_segments(cli: Cli, tmp_path: Path) -> None:
    """A reader lists a partition's segments, then opens them: a writer's retention may rename
    one in between. The read-only load starts again from the listing instead of failing."""
    data = tmp_path / "data"
    created = cli.run(
        "--data-dir", data, "topics", "create", "t", "--partitions", "1",
        "--config", "segment.bytes=1000", "--config", "retention.bytes=60000",
        data_dir=False,
    )  # fmt: skip
    assert created.status == 0, created.err
    script = (
        "import sys, threading, time\n"
        "from seglog.engine.log_manager import open_log_dirs\n"
        "manager = open_log_dirs([sys.argv[1]])\n"
        "log = manager.get_log('t', 0)\n"
        "stop = threading.Event()\n"
        "threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()\n"
        "print('ready', flush=True)\n"
        "while not stop.is_set():\n"
        "    log.append_records([(b'k', b'v' * 300)] * 3)\n"
        "    manager.run_retention()\n"
        "    time.sleep(0.002)\n"
        "manager.close()\n"
    )
    writer = subprocess.Popen(
        [sys.executable, "-c", script, str(data)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(SRC)},
    )
    try:
        assert writer.stdout is not None and writer.stdout.readline() == "ready\n"
        read_some = 0
        for _ in range(30):
            result = cli.run("--data-dir", data, "consume", "t", "--format", "json", data_dir=False)
            assert result.status == 0, result.err
            offsets = [json.loads(line)["offset"] for line in result.lines]
            if offsets:  # (empty only before the writer's first append)
                assert offsets == list(range(offsets[0], offsets[0] + len(offsets)))  # no gap
                read_some += 1
        assert read_some > 20
    finally:
        assert writer.stdin is not None
        writer.stdin.close()
        assert writer.wait(timeout=60) == 0
