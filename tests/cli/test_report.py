"""``seglog report`` on real data dirs: partitions, segment bars, dirty ratio, the three
histories, read-only opens (also of broker-written directories) and hostile strings."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest
from cli_support import Cli
from report_support import COMPACTED, DAY, EVENTS, T0, build_data_dir, parse_page

from seglog.cli.report import (
    RULE_COLOURS,
    UNLISTED_COLOUR,
    render_report,
    render_retention_history,
    retention_bars,
)
from seglog.engine.inspect.report_data import (
    CompactedCopyView,
    CompactionRunRow,
    PartitionReport,
    Report,
    RetentionEvent,
    RetentionSegment,
    SegmentBar,
    SegmentKind,
    TopicReport,
)
from seglog.engine.log_manager import open_log_dirs
from seglog.storage.history_file import COMPACTION_HISTORY_FILE, RETENTION_HISTORY_FILE
from seglog.storage.log_dir import CLEANER_HISTORY_FILE

HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>&amp;\'"'


def fingerprint(root: Path) -> dict[str, str]:
    """Every file under ``root`` and its sha256."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in root.rglob("*")
        if p.is_file()
    }


def test_report_shows_segments_dirty_ratio_and_every_history(cli: Cli, tmp_path: Path) -> None:
    built = build_data_dir(cli.data_dir)
    out = tmp_path / "out" / "page.html"
    out.parent.mkdir()
    result = cli.ok("report", "--out", out)
    assert result.out.strip() == str(out)
    page = parse_page(out.read_text("utf-8"))
    assert page.partitions == [f"{COMPACTED}-0", f"{EVENTS}-0", f"{EVENTS}-1"]
    assert not {"script", "img", "link", "iframe", "object"} & page.tags  # self-contained

    with open_log_dirs([cli.data_dir], read_only=True) as manager:
        expected = {
            str(tp): [(s.base_offset, s.size) for s in log.segments]
            for tp, log in manager.logs().items()
        }
        checkpoint = manager.cleaner_checkpoints()[next(iter(manager.logs()))]
        cleaner_round = manager.cleaner_manager.rounds(
            manager.get_log(COMPACTED, 0).topic_partition
        )
    for name, segments in expected.items():
        rects = page.segments[name]
        assert [(int(r["data-base-offset"]), int(r["data-size"])) for r in rects] == segments
    # compacted-0: cleaned below the checkpoint, three dirty segments, the active one
    kinds = [r["class"].split()[1] for r in page.segments[f"{COMPACTED}-0"]]
    clean = [b for b, _ in expected[f"{COMPACTED}-0"] if b < checkpoint]
    assert kinds == ["seg-clean"] * len(clean) + ["seg-dirty"] * 3 + ["seg-active"]
    assert [r["class"] for r in page.segments[f"{EVENTS}-0"]] == ["seg seg-active"]
    text = "".join(page.text)
    assert f"first dirty offset {checkpoint}" in text
    assert "min.cleanable.dirty.ratio 0.3" in text

    # the cleaner's round, from seglog-cleaner-history.json
    assert page.points[(f"{COMPACTED}-0", "cleaner-chart")] == built.cleaner_rounds == 1
    header, row = page.rows[(f"{COMPACTED}-0", "cleaner-history")]
    assert header[2:6] == ["bytes read", "bytes written", "log bytes", "keys"]
    (entry,) = cleaner_round
    assert row[2:6] == [
        str(entry["bytes_read"]),
        str(entry["bytes_written"]),
        f"{entry['size_before_bytes']} -> {entry['size_after_bytes']}",
        str(entry["map_keys"]),
    ]
    assert int(row[2]) > int(row[3]) > 0 and row[5] == "4"

    # the compactor's two runs: horizons 23 and 35, the copy holds 4 keys
    assert page.points[(f"{COMPACTED}-0", "compaction-chart")] == built.compaction_runs == 2
    runs = page.rows[(f"{COMPACTED}-0", "compaction-history")][1:]
    assert [(r[1], r[2], r[5]) for r in runs] == [("SUCCESS", "23", "4"), ("SUCCESS", "35", "4")]
    assert [r[0] for r in runs] == ["2023-11-14 22:13:21", "2023-11-14 22:14:21"]

    # retention: segments 0 and 1 of each events partition, by retention.ms
    for partition in (0, 1):
        name = f"{EVENTS}-{partition}"
        assert page.points[(name, "retention-chart")] == 1
        ((_, count, bases, size, rule, why, start),) = page.rows[(name, "retention-history")][1:]
        assert (count, bases, int(size), rule, start) == (
            "2",
            "0, 1",
            built.retention_bytes[name],
            "retention.ms",
            "2",
        )
        assert "over retention.ms 604800000" in why
    assert page.rows[(f"{COMPACTED}-0", "retention-history")] == []
    assert "No retention deletions recorded." in text


def test_report_configs_header_and_default_out(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    build_data_dir(cli.data_dir)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    assert cli.ok("report").out.strip() == "report.html"
    page_text = (work / "report.html").read_text("utf-8")
    page = parse_page(page_text)
    configs = {tuple(r) for r in page.rows[("", "configs")]}
    assert {
        ("cleanup.policy", "compact"),
        ("min.cleanable.dirty.ratio", "0.3"),
        ("cleanup.policy", "delete"),
        ("retention.ms", str(7 * DAY)),
        ("segment.bytes", "257"),
    } <= configs
    assert str(cli.data_dir) in "".join(page.text)
    assert "2 topics: compacted, events" in "".join(page.text)


def test_read_only_report_writes_nothing_in_the_data_dir(cli: Cli, tmp_path: Path) -> None:
    build_data_dir(cli.data_dir)
    cli.ok("topics", "list")  # removes the .deleted leftovers, so only the report could differ
    before = fingerprint(cli.data_dir)
    out = tmp_path / "ro.html"
    cli.ok("report", "--read-only", "--out", out)
    assert fingerprint(cli.data_dir) == before
    page = parse_page(out.read_text("utf-8"))
    assert "read-only" in "".join(page.text)
    assert page.points[(f"{EVENTS}-1", "retention-chart")] == 1


def _hostile_report() -> Report:
    bar = SegmentBar(0, 10, 100, SegmentKind.ACTIVE, T0)
    partition = PartitionReport(
        topic=HOSTILE,
        partition=0,
        directory=f"/data/{HOSTILE}",
        log_start_offset=0,
        log_end_offset=10,
        size_bytes=100,
        cleaner_checkpoint=None,
        segments=(bar,),
        dirty=None,
        cleaner_rounds=(),
        compaction_runs=(
            CompactionRunRow(T0, HOSTILE, 9, 100, 50, 3, 10, 3, 0.1, False, False, HOSTILE),
        ),
        retention_events=(
            RetentionEvent(T0, 1, 10, (HOSTILE,), 1, (RetentionSegment(0, 10, HOSTILE, HOSTILE),)),
        ),
        compacted_copy=CompactedCopyView(HOSTILE, HOSTILE, None, None),
    )
    topic = TopicReport(HOSTILE, False, (("cleanup.policy", HOSTILE),), (partition,))
    return Report(T0, (f"/data/{HOSTILE}",), False, (topic,), (HOSTILE,))


def test_a_pass_under_two_rules_draws_a_bar_per_rule() -> None:
    """A pass that deleted by retention.bytes and by retention.ms shows each rule's bytes in
    its own colour (not the whole pass in the first rule's colour)."""
    event = RetentionEvent(
        time_ms=T0,
        segment_count=4,
        bytes=100 + 200 + 300 + 50,
        rules=("retention.bytes", "retention.ms"),
        log_start_offset=40,
        segments=(
            RetentionSegment(0, 100, "retention.bytes", "over retention.bytes"),
            RetentionSegment(10, 200, "retention.ms", "old"),
            RetentionSegment(20, 300, "retention.ms", "old"),
        ),  # the fourth segment (50 bytes) is not listed
    )
    assert [(size, colour) for size, colour, _ in retention_bars(event)] == [
        (100, RULE_COLOURS["retention.bytes"]),
        (500, RULE_COLOURS["retention.ms"]),
        (50, UNLISTED_COLOUR),
    ]
    html = render_retention_history([event])
    chart = html.split('class="chart retention-chart"', 1)[1].split("</svg>", 1)[0]
    fills = re.findall(r'<rect [^>]*fill="(#[0-9a-f]{3,6})"', chart)
    assert fills == [RULE_COLOURS["retention.bytes"], RULE_COLOURS["retention.ms"], "#555"]
    heights = [float(h) for h in re.findall(r'<rect [^>]*height="([0-9.]+)"', chart)]
    assert heights[1] > heights[0] > heights[2] > 0  # 500 > 100 > 50 bytes, one axis


def test_hostile_strings_are_text_never_markup() -> None:
    page_text = render_report(_hostile_report())
    page = parse_page(page_text)
    assert not {"script", "img"} & page.tags
    assert "onerror" not in page.attributes and "src" not in page.attributes
    assert page.partitions == [f"{HOSTILE}-0"]  # the attribute value round-trips exactly
    text = "".join(page.text)
    assert text.count(HOSTILE) >= 8  # shown as text: topic, config, dir, reason, rule, ...
    assert "<script>" not in page_text and "<img" not in page_text


def test_hostile_data_dir_history_and_status_are_escaped(cli: Cli, tmp_path: Path) -> None:
    data_dir = tmp_path / 'd<img src=x onerror=alert(1)>"'
    cli.data_dir = data_dir
    build_data_dir(data_dir)
    # Hand-edited figures files: a hostile error message, compactor status and rule.
    history = json.loads((data_dir / COMPACTION_HISTORY_FILE).read_text())
    history["partitions"][f"{COMPACTED}-0"][0].update(state="ERROR", error=HOSTILE)
    (data_dir / COMPACTION_HISTORY_FILE).write_text(json.dumps(history))
    retention = json.loads((data_dir / RETENTION_HISTORY_FILE).read_text())
    retention["partitions"][f"{EVENTS}-0"][0]["rules"] = [HOSTILE]
    (data_dir / RETENTION_HISTORY_FILE).write_text(json.dumps(retention))
    status = data_dir / f"{COMPACTED}-0" / "compaction" / "status.json"
    body = json.loads(status.read_text())
    body["message"] = HOSTILE
    status.write_text(json.dumps(body))
    out = tmp_path / "hostile.html"
    cli.ok("report", "--read-only", "--out", out)
    page_text = out.read_text("utf-8")
    page = parse_page(page_text)
    assert not {"script", "img"} & page.tags
    assert "onerror" not in page.attributes
    text = "".join(page.text)
    assert str(data_dir) in text
    assert page.rows[(f"{COMPACTED}-0", "compaction-history")][1][-1] == HOSTILE
    assert page.rows[(f"{EVENTS}-0", "retention-history")][1][4] == HOSTILE
    assert f"compactor SUCCESS: {HOSTILE}" in text


def test_damaged_history_files_are_reported_not_fatal(cli: Cli, tmp_path: Path) -> None:
    build_data_dir(cli.data_dir)
    (cli.data_dir / RETENTION_HISTORY_FILE).write_bytes(b'{"version": 1, "partitions": [')
    (cli.data_dir / COMPACTION_HISTORY_FILE).write_bytes(b"\x00\xff garbage")
    (cli.data_dir / CLEANER_HISTORY_FILE).write_text('{"version": 99}')
    out = tmp_path / "damaged.html"
    cli.ok("report", "--read-only", "--out", out)
    page = parse_page(out.read_text("utf-8"))
    problems = [t for t in page.text if "unreadable history" in t]
    assert len(problems) == 2
    assert any(RETENTION_HISTORY_FILE in p for p in problems)
    assert any(COMPACTION_HISTORY_FILE in p for p in problems)
    assert page.partitions == [f"{COMPACTED}-0", f"{EVENTS}-0", f"{EVENTS}-1"]
    assert page.points == {}  # every history reads as empty
    assert len(page.segments[f"{COMPACTED}-0"]) == 9


@pytest.mark.compat
def test_report_of_broker_written_directories(cli: Cli, corpus_dir: Path, tmp_path: Path) -> None:
    roots = sorted({p.parent.parent for p in corpus_dir.glob("*/**/*.log")})
    assert roots
    for i, root in enumerate(roots):
        before = fingerprint(root)
        out = tmp_path / f"broker-{i}.html"
        result = cli.run("--read-only", "--data-dir", root, "report", "--out", out, data_dir=False)
        assert result.status == 0, (root, result.err)
        assert fingerprint(root) == before
        page = parse_page(out.read_text("utf-8"))
        with open_log_dirs([root], read_only=True) as manager:
            logs = manager.logs()
            assert sorted(page.partitions) == sorted(str(tp) for tp in logs)
            for tp, log in logs.items():
                assert len(page.segments[str(tp)]) == len(log.segments), (root, tp)
