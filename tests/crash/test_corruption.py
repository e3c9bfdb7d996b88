"""Damage to a data directory's files, read through the engine (issue 8, corruption matrix).

Rules under test:

* ``.log``, closed segment, after a clean shutdown (no recovery runs): a bit flip or a cut
  anywhere in it never comes back as data and is never skipped silently. Reading the log
  either returns exactly the original records or raises ``CorruptRecordError`` naming the
  damaged file and the position of the damaged batch; ``verify_log`` (``seglog verify``)
  reports the same file, and ``seglog verify`` exits 1 naming it.
* ``.log`` tail after an unclean shutdown (torn tail, zero-filled tail): recovery cuts it at
  the last valid batch and says so in the load report; every whole batch before it stays.
* root files (offset checkpoints, ``meta.properties``, ``seglog-topics.json``, the cleaner
  history) and a partition's ``partition.metadata`` / ``leader-epoch-checkpoint``, flipped,
  cut, zero-filled or emptied: the directory either refuses to open with a typed error
  naming the file, or opens with the documented fallback (an unreadable recovery-point
  checkpoint means "recover everything", an unreadable cleaner history reads as empty, a
  damaged leader-epoch checkpoint as empty, ...) and every record reads back unchanged.

Index files are covered by ``tests/fuzz/test_fuzz_files.py`` (damaged ``.index`` /
``.timeindex`` never make reads skip records; two known gaps are strict xfails there) and
``tests/engine/test_log_recovery.py`` (a contradicting index is rebuilt).

Trials: ``SEGLOG_CORRUPTION_TRIALS`` random flips and cuts (default 40,
``SEGLOG_RELIABILITY=long``: 600), seed ``SEGLOG_CORRUPTION_SEED``.
"""

from __future__ import annotations

import json
import os
import random
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from seglog.cli.main import main as seglog_main
from seglog.engine.inspect.verify import verify_log
from seglog.engine.log_manager import LogManager, open_log_dirs
from seglog.errors import CorruptRecordError, InvalidConfigError, SeglogError
from seglog.format.reader import read_batches
from support.reliability import record_figures, scaled

pytestmark = pytest.mark.crash

TRIALS = scaled("SEGLOG_CORRUPTION_TRIALS", 40, 600)
SEED = int(os.environ.get("SEGLOG_CORRUPTION_SEED", "20250611"))
TOPIC = "t"
RECORDS = 120
Row = tuple[int, bytes | None, bytes | None]


def build_template(root: Path) -> list[Row]:
    """A cleanly closed data directory: topic ``t`` over several segments; returns its rows."""
    with open_log_dirs([root]) as manager:
        manager.create_topic(TOPIC, 1, {"segment.bytes": "1500", "index.interval.bytes": "200"})
        log = manager.get_log(TOPIC, 0)
        for i in range(0, RECORDS, 3):
            log.append_records([(b"key-%d" % j, b"value-%05d" % j) for j in range(i, i + 3)])
        rows = read_rows(manager)
    assert len(list((root / f"{TOPIC}-0").glob("*.log"))) >= 4
    return rows


def read_rows(manager: LogManager) -> list[Row]:
    log = manager.get_log(TOPIC, 0)
    return [(r.offset, r.key, r.value) for r in log.iter_records(log.log_start_offset)]


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Row]]:
    root = tmp_path_factory.mktemp("corruption") / "template"
    return root, build_template(root)


def closed_segments(root: Path) -> list[Path]:
    return sorted((root / f"{TOPIC}-0").glob("*.log"))[:-1]


def batch_start(data: bytes, position: int) -> int:
    """Start of the original batch holding byte ``position``."""
    batches, _ = read_batches(data)
    for batch in batches:
        if batch.position <= position < batch.position + batch.size_in_bytes:
            return batch.position
    raise AssertionError(f"no batch holds position {position}")


# --- .log: damage in the middle of a closed segment -----------------------------------------
def flip(data: bytes, rng: random.Random) -> tuple[bytes, int]:
    position = rng.randrange(len(data))
    damaged = bytearray(data)
    damaged[position] ^= 1 << rng.randrange(8)
    return bytes(damaged), position


def cut(data: bytes, rng: random.Random) -> tuple[bytes, int]:
    position = rng.randrange(1, len(data))
    return data[:position], position


def check_closed_segment_damage(
    work: Path,
    original: list[Row],
    damage: Callable[[bytes, random.Random], tuple[bytes, int]],
    rng: random.Random,
) -> str:
    """Damage one closed segment of ``work``; returns ``"same"``, ``"raised"`` or ``"cut by
    recovery"`` (the loader rebuilt the segment's contradicting index, see below)."""
    victim = rng.choice(closed_segments(work))
    data = victim.read_bytes()
    damaged, position = damage(data, rng)
    victim.write_bytes(damaged)
    first_bad = batch_start(data, min(position, len(data) - 1))
    manager = open_log_dirs([work])  # the template shut down cleanly: no recovery
    try:
        log = manager.get_log(TOPIC, 0)
        report = verify_log(log)
        try:
            rows = read_rows(manager)
        except CorruptRecordError as exc:
            assert exc.path == str(victim), (exc, victim)
            assert exc.position is not None and exc.position <= position, (exc, position)
            assert exc.position >= first_bad or position - exc.position < 61, (exc, first_bad)
            assert not report.ok and str(victim) in {p.path for p in report.problems}, report
            return "raised"
        if rows == original:
            # Only bytes no reader sees (e.g. the partition leader epoch, outside the CRC)
            # may change without an error.
            return "same"
        # The loader found the segment's index contradicting the cut or damaged log: it
        # recovered the segment (cut at the last valid batch) and rebuilt its index. Data is
        # lost then, but never silently: the load report says so.
        [load] = [r for r in manager.load_reports if r.directory.name == f"{TOPIC}-0"]
        base = int(victim.name.split(".")[0])
        is_reported = any(
            r.base_offset == base and r.truncated_bytes for r in load.recovered
        ) or any(
            line.startswith(victim.name.split(".")[0]) for line in load.rebuilt_indexes
        )  # a cut at a batch boundary leaves nothing to truncate; the index said it
        assert is_reported, f"damage at {victim.name}:{position} changed the data without a report"
        assert set(rows) < set(original), "recovery changed records instead of dropping them"
        return "cut by recovery"
    finally:
        manager.close()


@pytest.mark.parametrize("kind", ["flip", "cut"])
def test_damage_in_a_closed_segment_is_an_error_naming_file_and_position(
    tmp_path: Path, template: tuple[Path, list[Row]], kind: str
) -> None:
    root, original = template
    rng = random.Random(f"{SEED}-{kind}")
    outcomes = {"same": 0, "raised": 0, "cut by recovery": 0}
    for trial in range(TRIALS):
        work = tmp_path / f"trial-{trial}"
        shutil.copytree(root, work)
        outcome = check_closed_segment_damage(work, original, flip if kind == "flip" else cut, rng)
        outcomes[outcome] += 1
        shutil.rmtree(work)
    record_figures(f"corruption-log-{kind}", trials=TRIALS, **outcomes)
    assert outcomes["raised"] + outcomes["cut by recovery"] > TRIALS // 2, outcomes
    if kind == "cut":
        assert outcomes["same"] == 0, outcomes  # a closed segment cut short always loses data


def test_seglog_verify_names_the_damaged_closed_segment(
    tmp_path: Path,
    template: tuple[Path, list[Row]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    root, _ = template
    work = tmp_path / "work"
    shutil.copytree(root, work)
    victim = closed_segments(work)[1]
    data = bytearray(victim.read_bytes())
    batches, _ = read_batches(bytes(data))
    middle = batches[len(batches) // 2]
    data[middle.position + middle.size_in_bytes - 3] ^= 0x40  # inside the last record's value
    victim.write_bytes(bytes(data))
    capsys.readouterr()
    status = seglog_main(["--data-dir", str(work), "verify", "--json", TOPIC])
    document = json.loads(capsys.readouterr().out)
    assert status == 1 and document["ok"] is False
    [problem] = document["partitions"][0]["problems"]
    assert (problem["kind"], problem["path"], problem["position"]) == (
        "crc",
        str(victim),
        middle.position,
    )
    with open_log_dirs([work]) as manager, pytest.raises(CorruptRecordError) as caught:
        read_rows(manager)
    assert (caught.value.path, caught.value.position) == (str(victim), middle.position)


# --- .log: torn and zero-filled tails after an unclean shutdown ----------------------------
@pytest.mark.parametrize("tail", ["torn", "zeros"])
def test_a_bad_tail_is_cut_at_the_last_valid_batch_with_a_report(
    tmp_path: Path, template: tuple[Path, list[Row]], tail: str
) -> None:
    root, original = template
    work = tmp_path / "work"
    shutil.copytree(root, work)
    (work / ".kafka_cleanshutdown").unlink()  # as if the process died
    active = sorted((work / f"{TOPIC}-0").glob("*.log"))[-1]
    size = active.stat().st_size
    extra = active.read_bytes()[:45] if tail == "torn" and size else bytes(45)
    if tail == "zeros":
        extra = bytes(4096)
    with active.open("ab") as handle:
        handle.write(extra)
    with open_log_dirs([work]) as manager:
        [report] = [r for r in manager.load_reports if r.directory.name == f"{TOPIC}-0"]
        assert report.truncated_bytes == len(extra)
        assert f"truncated {len(extra)}" in report.summary()
        assert read_rows(manager) == original
    assert active.stat().st_size == size


# --- root and partition metadata files -------------------------------------------------------
ROOT_FILES = [
    "recovery-point-offset-checkpoint",
    "log-start-offset-checkpoint",
    "replication-offset-checkpoint",
    "cleaner-offset-checkpoint",
    "meta.properties",
    "seglog-topics.json",
    f"{TOPIC}-0/partition.metadata",
    f"{TOPIC}-0/leader-epoch-checkpoint",
]
DAMAGES: dict[str, Callable[[bytes, random.Random], bytes]] = {
    "flip": lambda data, rng: flip(data, rng)[0] if data else b"\x01",
    "cut": lambda data, rng: data[: rng.randrange(len(data))] if data else b"",
    "zeros": lambda data, rng: data[: len(data) // 2] + bytes(len(data) - len(data) // 2 + 8),
    "empty": lambda data, rng: b"",
    "garbage": lambda data, rng: bytes(rng.randrange(256) for _ in range(rng.randrange(1, 64))),
}


@pytest.mark.parametrize("damage", sorted(DAMAGES))
@pytest.mark.parametrize("name", ROOT_FILES)
def test_damaged_metadata_is_a_typed_error_or_a_documented_fallback(
    tmp_path: Path, template: tuple[Path, list[Row]], name: str, damage: str
) -> None:
    root, original = template
    outcomes: dict[str, int] = {}
    for seed in range(max(3, TRIALS // 40)):
        work = tmp_path / f"work-{seed}"
        shutil.copytree(root, work)
        if seed % 2:
            (work / ".kafka_cleanshutdown").unlink()  # also after a crash (recovery runs)
        path = work / name
        path.write_bytes(DAMAGES[damage](path.read_bytes(), random.Random(f"{name}{seed}")))
        try:
            manager = open_log_dirs([work])
        except InvalidConfigError as exc:
            # A flipped config key or value in seglog-topics.json: typed, naming the file.
            assert name == "seglog-topics.json" and "seglog-topics.json" in str(exc), exc
            outcomes["refused"] = outcomes.get("refused", 0) + 1
        except SeglogError as exc:
            # Refusing to open must name the damaged file.
            assert name.rsplit("/", maxsplit=1)[-1] in str(exc), exc
            outcomes["refused"] = outcomes.get("refused", 0) + 1
        else:
            try:
                assert read_rows(manager) == original
                log = manager.get_log(TOPIC, 0)
                assert log.log_end_offset == RECORDS
                assert verify_log(log).ok
            finally:
                manager.close()
            outcomes["opened"] = outcomes.get("opened", 0) + 1
        shutil.rmtree(work)
    record_figures(f"corruption-{name}-{damage}", **outcomes)


# --- .log: a closed segment that lost its tail (RELIABILITY.md finding 4) ------------------
def cut_closed_segment(work: Path, inside_a_batch: bool) -> tuple[Path, int, int]:
    """Cut the second closed segment in the middle of its batches (at a batch boundary, or a
    few bytes into the batch); returns it, the first offset lost and the next segment's base."""
    victim = closed_segments(work)[1]
    data = victim.read_bytes()
    batches, _ = read_batches(data)
    first_lost = batches[len(batches) // 2]
    keep = first_lost.position + (first_lost.size_in_bytes // 2 if inside_a_batch else 0)
    victim.write_bytes(data[:keep])
    next_base = int(sorted((work / f"{TOPIC}-0").glob("*.log"))[2].name.split(".")[0])
    return victim, first_lost.base_offset, next_base


@pytest.mark.parametrize("inside_a_batch", [False, True], ids=["at-a-boundary", "inside-a-batch"])
def test_a_closed_segment_that_lost_its_tail_is_reported_as_records_lost(
    tmp_path: Path,
    template: tuple[Path, list[Row]],
    capsys: pytest.CaptureFixture[str],
    inside_a_batch: bool,
) -> None:
    root, original = template
    work = tmp_path / "work"
    shutil.copytree(root, work)
    victim, first_lost, next_base = cut_closed_segment(work, inside_a_batch)
    lost_offsets = set(range(first_lost, next_base))
    segments_before = sorted(p.name for p in (work / f"{TOPIC}-0").glob("*.log"))

    # seglog verify (a read-only open: files unchanged) names the file and the lost range
    capsys.readouterr()
    status = seglog_main(["--data-dir", str(work), "verify", "--json", TOPIC])
    problems = json.loads(capsys.readouterr().out)["partitions"][0]["problems"]
    assert status == 1
    lost = [p for p in problems if p["kind"] == "records-lost"]
    assert [(p["path"], p["offset"]) for p in lost] == [(str(victim), first_lost)], problems
    assert f"{first_lost}-{next_base - 1}" in lost[0]["message"], lost[0]
    assert not [p for p in problems if p["kind"] == "offset-gap"], "reported twice"

    # a writable open repairs the segment, keeps the later ones and says records were lost
    with open_log_dirs([work]) as manager:
        [load] = [r for r in manager.load_reports if r.directory.name == f"{TOPIC}-0"]
        assert [(r.file, r.first_offset, r.last_offset) for r in load.lost_ranges] == [
            (victim.name, first_lost, next_base - 1)
        ], load.lost_ranges
        assert f"RECORDS LOST: {victim.name}: records at offsets {first_lost}-" in load.summary()
        assert not load.dropped_segments
        rows = read_rows(manager)
        assert rows == [row for row in original if row[0] not in lost_offsets]
        # verify on the repaired (writable) log: the gap itself
        report = verify_log(manager.get_log(TOPIC, 0))
        gaps = [p for p in report.problems if p.kind == "offset-gap"]
        assert [(p.path, p.offset) for p in gaps] == [(str(victim), first_lost)], report
    assert sorted(p.name for p in (work / f"{TOPIC}-0").glob("*.log")) == segments_before

    # and seglog verify keeps reporting the gap on later runs (the load has nothing left to say)
    status = seglog_main(["--data-dir", str(work), "verify", "--json", TOPIC])
    problems = json.loads(capsys.readouterr().out)["partitions"][0]["problems"]
    assert status == 1
    assert [(p["kind"], p["path"], p["offset"]) for p in problems] == [
        ("offset-gap", str(victim), first_lost)
    ], problems
