"""``seglog compact``, ``seglog compaction-status`` and ``consume --read-compacted``: real files,
the real compactor, in process (each command opens the data dir anew, as a new process does)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from cli_support import Cli

from seglog.engine import log_manager
from seglog.engine.compaction.compactor import CompactionService, Compactor
from seglog.engine.log import Log

TIMEOUT_S = 120
STATUS_JSON = ("compaction-status", "q", "--json")
# Three keys, each written more than once: the copy keeps a:3, b:2, c:1 (offsets 4, 3, 5).
KEYED = b"a:1\nb:1\na:2\nb:2\na:3\nc:1\n"


def produce(cli: Cli, topic: str, lines: bytes) -> None:
    """``seglog produce TOPIC --key-separator :`` with ``lines`` on stdin."""
    cli.ok("produce", topic, "--key-separator", ":", stdin=lines)


def create(cli: Cli, topic: str, partitions: int = 1, *configs: str) -> None:
    """``seglog topics create``, with ``--config KEY=VALUE`` for each of ``configs``."""
    options = [arg for config in configs for arg in ("--config", config)]
    cli.ok("topics", "create", topic, "--partitions", str(partitions), *options)


def as_json(cli: Cli, *args: str) -> dict[str, Any]:
    """A command's ``--json`` output, parsed (it must be one document on one line)."""
    lines = cli.ok(*args, "--json").lines
    assert len(lines) == 1
    document: dict[str, Any] = json.loads(lines[0])
    return document


def keyed(cli: Cli, *args: str) -> list[tuple[int, int, str | None, str | None]]:
    """``consume ARGS --format json`` as (partition, offset, key, value)."""
    out = cli.ok("consume", *args, "--format", "json").lines
    records = [json.loads(line) for line in out]
    return [(r["partition"], r["offset"], r["key"], r["value"]) for r in records]


def snapshot(root: Path) -> dict[str, tuple[int, int]]:
    """Every path under ``root`` with its size and mtime (ns): to see that nothing changed."""
    return {
        str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*")
    }


def status_table(cli: Cli, topic: str) -> list[list[str]]:
    """``compaction-status`` rows split at runs of two spaces (the MESSAGE cell has spaces)."""
    lines = cli.ok("compaction-status", topic).lines
    return [[cell.strip() for cell in line.split("  ") if cell.strip()] for line in lines]


STATUS_HEADER = [
    "PARTITION",
    "STATE",
    "HORIZON",
    "RECORDS_READ",
    "KEPT",
    "REMOVED",
    "KEYS",
    "DURATION_S",
    "MESSAGE",
]


# --- compact, status, read-compacted ----------------------------------------------------------


def test_compact_then_status_then_read_compacted(cli: Cli, data_dir: Path) -> None:
    create(cli, "q", 1, "segment.bytes=200")
    produce(cli, "q", KEYED)

    result = cli.ok("compact", "q")
    first, summary = result.lines
    assert first.startswith(
        "q-0: horizon none -> 5; records read 6, kept 3, removed 3; 3 keys; bytes read "
    )
    assert " bytes in 1 segment; " in first and first.endswith(" s")
    assert summary == "Compacted 1 partition."
    # The copy sits beside the log, which is untouched.
    assert (data_dir / "q-0" / "compaction" / "published.json").is_file()
    assert [r[1:] for r in keyed(cli, "q")] == [
        (0, "a", "1"),
        (1, "b", "1"),
        (2, "a", "2"),
        (3, "b", "2"),
        (4, "a", "3"),
        (5, "c", "1"),
    ]

    # The status is persisted: a new invocation (a new open of the data dir) reads it.
    rows = status_table(cli, "q")
    assert rows[0] == STATUS_HEADER
    assert rows[1][:7] == ["q-0", "SUCCESS", "5", "6", "3", "3", "3"]
    assert float(rows[1][7]) >= 0
    assert rows[1][8] == "-"

    # Records produced after the compaction come after the horizon, from the log.
    produce(cli, "q", b"a:4\nd:1\n")
    compacted = cli.ok("consume", "q", "--read-compacted", "--print-key", "--key-separator", "=")
    assert compacted.lines == ["b=2", "a=3", "c=1", "a=4", "d=1"]
    assert compacted.err == "Processed a total of 5 messages\n"
    assert [r[1] for r in keyed(cli, "q", "--read-compacted")] == [3, 4, 5, 6, 7]
    # Without the option, every record.
    assert len(keyed(cli, "q")) == 8


def test_status_survives_a_new_process(cli: Cli, data_dir: Path) -> None:
    create(cli, "q", 1)
    produce(cli, "q", KEYED)
    cli.ok("compact", "q")
    done = subprocess.run(
        [sys.executable, "-m", "seglog.cli", "--data-dir", str(data_dir), *STATUS_JSON],
        capture_output=True,
        timeout=TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    (partition,) = json.loads(done.stdout)["partitions"]
    assert partition["state"] == "SUCCESS"
    figures = partition["figures"]
    assert (figures["horizon"], figures["records_read"], figures["records_kept"]) == (5, 6, 3)
    assert (figures["records_removed"], figures["keys"]) == (3, 3)


def test_compact_json(cli: Cli, data_dir: Path) -> None:
    create(cli, "q", 2)
    produce(cli, "q", KEYED)
    document = as_json(cli, "compact", "q")
    assert document["topic"] == "q" and document["partition"] is None
    results = {r["partition"]: r for r in document["results"]}
    assert sorted(results) == [0, 1]
    with_data = [r for r in document["results"] if not r["run"]["is_noop"]]
    for result in document["results"]:
        assert result["error"] is None and result["already_running"] is False
        run = result["run"]
        assert run["records_read"] == run["records_kept"] + run["records_removed"]
        assert run["previous_horizon"] == -1
    assert sum(r["run"]["records_read"] for r in with_data) == 6
    assert sum(r["run"]["keys"] for r in with_data) == 3  # a key goes to one partition
    for result in with_data:
        run = result["run"]
        assert run["horizon"] >= 0 and run["copy"].startswith("copy-")
        assert run["copy_bytes"] > 0 and run["segments"] >= 1 and run["duration_s"] >= 0

    # Again: nothing new, the horizon stays.
    again = as_json(cli, "compact", "q", "--partition", str(with_data[0]["partition"]))
    (result,) = again["results"]
    assert result["run"]["is_noop"] is True
    assert result["run"]["horizon"] == with_data[0]["run"]["horizon"]
    assert result["message"] == "nothing new since the last run"
    text = cli.ok("compact", "q", "--partition", str(with_data[0]["partition"])).lines
    horizon = result["run"]["horizon"]
    assert f"no-op, nothing new since the last run: horizon stays {horizon} (" in text[0]
    assert text[-1] == "Compacted 0 partitions; 1 had nothing new."


def test_read_compacted_across_partitions_and_with_options(cli: Cli, data_dir: Path) -> None:
    create(cli, "m", 3)
    # JSON lines pin each record's partition.
    lines = [
        {"key": f"k{i % 4}", "value": f"v{i}", "partition": i % 2} for i in range(12)
    ]  # partition 0 gets k0, k2; partition 1 gets k1, k3; each key three times
    produce_json = "\n".join(json.dumps(line) for line in lines).encode() + b"\n"
    cli.ok("produce", "m", "--format", "json", stdin=produce_json)
    cli.ok("compact", "m")
    cli.ok(
        "produce",
        "m",
        "--format",
        "json",
        stdin=b'{"key": "k0", "value": "tail", "partition": 0}\n',
    )

    everything = keyed(cli, "m", "--read-compacted")
    assert [(p, k, v) for p, _, k, v in everything] == [
        (0, "k0", "v8"),
        (0, "k2", "v10"),
        (0, "k0", "tail"),
        (1, "k1", "v9"),
        (1, "k3", "v11"),
    ]
    assert [r[:2] for r in everything] == [(0, 4), (0, 5), (0, 6), (1, 4), (1, 5)]
    # --partition, --max-records, --offset N, --offset latest.
    assert [r[3] for r in keyed(cli, "m", "--read-compacted", "--partition", "1")] == [
        "v9",
        "v11",
    ]
    assert [r[3] for r in keyed(cli, "m", "--read-compacted", "--max-records", "3")] == [
        "v8",
        "v10",
        "tail",
    ]
    assert [
        r[3] for r in keyed(cli, "m", "--read-compacted", "--partition", "0", "--offset", "5")
    ] == ["v10", "tail"]
    assert keyed(cli, "m", "--read-compacted", "--partition", "0", "--offset", "latest") == []
    # Text output: values, null markers, separators as without the option.
    cli.ok(
        "produce", "m", "--format", "json", stdin=b'{"key": "k2", "value": null, "partition": 0}\n'
    )
    text = cli.ok(
        "consume", "m", "--read-compacted", "--partition", "0", "--print-key", "--null-value", "-"
    ).lines
    assert text == ["k0\tv8", "k2\tv10", "k0\ttail", "k2\t-"]
    # An offset past the log end is refused, as without the option.
    result = cli.run("consume", "m", "--read-compacted", "--partition", "0", "--offset", "99")
    assert result.status == 1
    assert result.err.startswith("seglog: error: offset 99 is outside [0, 8]")


def test_read_compacted_without_a_copy_reads_the_log(cli: Cli, data_dir: Path) -> None:
    create(cli, "q", 1)
    produce(cli, "q", KEYED)
    assert keyed(cli, "q", "--read-compacted") == keyed(cli, "q")


def test_the_copy_outlives_the_log_start_offset(cli: Cli, data_dir: Path, tmp_path: Path) -> None:
    create(cli, "q", 1, "segment.bytes=100")
    produce(cli, "q", KEYED)
    cli.ok("compact", "q")
    request = tmp_path / "delete.json"
    request.write_text(
        json.dumps({"partitions": [{"topic": "q", "partition": 0, "offset": 5}], "version": 1})
    )
    cli.ok("delete-records", "--offset-json-file", str(request))
    assert [r[1] for r in keyed(cli, "q")] == [5]
    # The compacted view keeps b:2 and a:3 below the new log start offset 5.
    assert [r[1:] for r in keyed(cli, "q", "--read-compacted")] == [
        (3, "b", "2"),
        (4, "a", "3"),
        (5, "c", "1"),
    ]
    assert [
        r[1] for r in keyed(cli, "q", "--read-compacted", "--partition", "0", "--offset", "4")
    ] == [
        4,
        5,
    ]
    # Without a copy, an offset below the log start is out of range, as without the option.
    result = cli.run("consume", "q", "--partition", "0", "--offset", "4")
    assert result.status == 1 and "outside [5, 6]" in result.err


# --- status -----------------------------------------------------------------------------------


def test_status_of_a_never_compacted_topic_is_not_run(cli: Cli, data_dir: Path) -> None:
    create(cli, "q", 2)
    produce(cli, "q", KEYED)
    rows = status_table(cli, "q")
    assert rows == [
        STATUS_HEADER,
        ["q-0", "NOT_RUN", "-", "-", "-", "-", "-", "-", "-"],
        ["q-1", "NOT_RUN", "-", "-", "-", "-", "-", "-", "-"],
    ]
    document = as_json(cli, "compaction-status", "q")
    assert document == {
        "topic": "q",
        "partitions": [
            {"topic": "q", "partition": p, "state": "NOT_RUN", "message": "", "figures": None}
            for p in (0, 1)
        ],
    }


def test_status_is_read_only(cli: Cli, data_dir: Path) -> None:
    create(cli, "q", 1)
    produce(cli, "q", KEYED)
    cli.ok("compact", "q")
    before = snapshot(data_dir)
    cli.ok("compaction-status", "q")
    cli.ok("compaction-status", "q", "--json")
    cli.ok("consume", "q", "--read-compacted", "--read-only")
    assert snapshot(data_dir) == before


def test_unknown_topics_and_partitions(cli: Cli, data_dir: Path) -> None:
    create(cli, "q", 1)
    for args in (
        ("compact", "nope"),
        ("compaction-status", "nope"),
        ("consume", "nope", "--read-compacted"),
    ):
        result = cli.run(*args)
        assert (result.status, result.out) == (1, ""), args
        assert result.err.startswith("seglog: error: topic 'nope' does not exist"), args
        assert result.err.count("\n") == 1 and "topics list" in result.err, args
    result = cli.run("compact", "q", "--partition", "3")
    assert (result.status, result.err) == (1, "seglog: error: topic 'q' has no partition 3\n")
    result = cli.run("compact", "bad/name")
    assert result.status == 2 and "bad/name" in result.err


def test_compact_refuses_read_only(cli: Cli, data_dir: Path) -> None:
    create(cli, "q", 1)
    before = snapshot(data_dir)
    result = cli.run("compact", "q", "--read-only")
    assert result.status == 2
    assert "seglog compact: error: compaction writes a new compacted copy" in result.err
    assert snapshot(data_dir) == before


# --- already running, partial runs, errors ----------------------------------------------------


def test_a_partition_already_compacting_is_reported(
    cli: Cli, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    create(cli, "q", 2)
    produce(cli, "q", KEYED)
    real = CompactionService.compact

    def busy_partition_one(self: CompactionService, log: Log) -> Any:
        if log.topic_partition.partition == 1:
            self._running.add(log.topic_partition)  # a run of q-1 is under way
        return real(self, log)

    monkeypatch.setattr(CompactionService, "compact", busy_partition_one)
    result = cli.run("compact", "q")
    assert result.status == 1
    assert result.lines[1] == "q-1: not compacted: a compaction of q-1 is already running"
    assert result.lines[2] == "Compacted 1 partition; 1 failed."
    document = json.loads(cli.run("compact", "q", "--json").out)
    (busy,) = [r for r in document["results"] if r["partition"] == 1]
    assert busy["already_running"] is True and busy["run"] is None
    assert "already running" in busy["error"]


@pytest.fixture
def tiny_offset_map(monkeypatch: pytest.MonkeyPatch) -> None:
    """The compactor's offset map holds 4 keys (5 slots at load factor 0.9)."""
    monkeypatch.setattr(log_manager, "per_thread_map_bytes", lambda _broker: 5 * 24)


@pytest.mark.usefixtures("tiny_offset_map")
def test_a_full_offset_map_makes_a_partial_run(cli: Cli, data_dir: Path) -> None:
    create(cli, "q", 1)
    produce(cli, "q", b"a:1\nb:1\n")  # each produce is one batch
    produce(cli, "q", b"c:1\nd:1\n")
    produce(cli, "q", b"e:1\nf:1\n")
    result = cli.ok("compact", "q")
    assert result.lines[0].startswith("q-0: horizon none -> 3; ")
    assert result.lines[1] == (
        "q-0: partial: the offset map filled; compacted up to offset 3; the next run goes on "
        "from there"
    )
    rows = status_table(cli, "q")
    assert rows[1][:3] == ["q-0", "SUCCESS", "3"]
    assert rows[1][-1].startswith("partial: the offset map filled")
    second = cli.ok("compact", "q").lines
    assert second[0].startswith("q-0: horizon 3 -> 5; ")
    assert [r[2] for r in keyed(cli, "q", "--read-compacted")] == ["a", "b", "c", "d", "e", "f"]


@pytest.mark.usefixtures("tiny_offset_map")
def test_a_failed_run_is_an_error_state(cli: Cli, data_dir: Path) -> None:
    create(cli, "q", 1)
    produce(cli, "q", b"a:1\nb:1\nc:1\nd:1\ne:1\nf:1\n")  # one batch of more keys than fit
    result = cli.run("compact", "q")
    assert result.status == 1
    assert result.lines[0].startswith("q-0: not compacted: CompactionError: q-0: the batch at")
    assert result.lines[-1] == "Compacted 0 partitions; 1 failed."
    rows = status_table(cli, "q")
    assert rows[1][:3] == ["q-0", "ERROR", "-"]
    assert rows[1][-1].startswith("CompactionError: q-0: the batch at offset 0 holds more")
    (partition,) = as_json(cli, "compaction-status", "q")["partitions"]
    assert (
        partition["state"] == "ERROR" and "log.cleaner.dedupe.buffer.size" in partition["message"]
    )
    assert not (data_dir / "q-0" / "compaction" / "published.json").exists()
    # The log is whole, and a read-compacted reader reads it.
    assert len(keyed(cli, "q", "--read-compacted")) == 6


def test_an_interrupt_stops_between_partitions(
    cli: Cli, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    create(cli, "q", 2)
    produce(cli, "q", KEYED)
    real = Compactor.compact

    def interrupted(self: Compactor, log: Log, **kwargs: Any) -> Any:
        signal.raise_signal(signal.SIGINT)  # Ctrl-C while the first partition compacts
        return real(self, log, **kwargs)

    monkeypatch.setattr(Compactor, "compact", interrupted)
    result = cli.run("compact", "q")
    assert result.status == 130
    assert result.lines[0].startswith("q-0: ")
    assert result.lines[-1].endswith("; interrupted before the other partitions.")
    assert len(result.lines) == 2
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    monkeypatch.undo()
    states = [p["state"] for p in as_json(cli, "compaction-status", "q")["partitions"]]
    assert states == ["SUCCESS", "NOT_RUN"]
