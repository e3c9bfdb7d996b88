"""Helpers of the ``seglog report`` tests: a data dir with history to report, and a parser of
the page's markup contract (see :mod:`seglog.cli.report`)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

from seglog.clock import ManualClock
from seglog.engine.log_manager import open_log_dirs
from seglog.format.batch import encode_batch
from seglog.format.records import Record

T0 = 1_700_000_000_000
DAY = 86_400_000
COMPACTED = "compacted"
EVENTS = "events"


def batch(pairs: list[tuple[bytes, bytes | None]], timestamp: int) -> bytes:
    """A producer batch (base offset 0) of (key, value) records, all stamped ``timestamp``."""
    return encode_batch([Record(i, timestamp, k, v) for i, (k, v) in enumerate(pairs)])


@dataclass
class BuiltDir:
    """What :func:`build_data_dir` did, to compare the report with."""

    path: Path
    clock: ManualClock
    retention_bytes: dict[str, int] = field(default_factory=dict)  # partition -> bytes deleted
    cleaner_rounds: int = 0
    compaction_runs: int = 0


def build_data_dir(path: Path) -> BuiltDir:
    """A data dir with:

    * ``compacted`` (1 partition, ``cleanup.policy=compact``): 6 segments written, one cleaner
      round, then 3 more segments (dirty), two compactor runs (two records in the history);
    * ``events`` (2 partitions, ``retention.ms`` one week): per partition 3 segments stamped
      9, 8 and 0 days ago; one retention pass deletes the first two of each.
    """
    clock = ManualClock(T0)
    built = BuiltDir(path, clock)
    small = str(len(batch([(b"k0", b"v" * 40)] * 4, T0)))
    with open_log_dirs([path], clock=clock) as manager:
        manager.create_topic(
            COMPACTED,
            1,
            {
                "cleanup.policy": "compact",
                "segment.bytes": small,
                "min.cleanable.dirty.ratio": "0.3",
            },
        )
        manager.create_topic(
            EVENTS,
            2,
            {
                "retention.ms": str(7 * DAY),
                "segment.bytes": str(len(batch([(b"k", b"v" * 40)], T0))),
            },
        )
        log = manager.get_log(COMPACTED, 0)
        for round_ in range(6):
            log.append(batch([(b"k%d" % i, b"%d" % round_ + b"v" * 39) for i in range(4)], T0))
        clock.advance(1000)
        results = manager.clean_once(topic=COMPACTED)
        assert [r.error for r in results] == [None]
        built.cleaner_rounds = 1
        manager.compact(COMPACTED)
        clock.advance(60_000)
        for round_ in range(3):
            log.append(batch([(b"k%d" % i, b"n%d" % round_ + b"v" * 38) for i in range(4)], T0))
        manager.compact(COMPACTED)
        built.compaction_runs = 2
        for partition in range(2):
            events = manager.get_log(EVENTS, partition)
            for age in (9, 8, 0):
                events.append(batch([(b"k", b"%d" % age + b"v" * 39)], T0 - age * DAY))
        clock.advance(60_000)
        sizes = {
            f"{EVENTS}-{p}": sum(s.size for s in manager.get_log(EVENTS, p).segments[:2])
            for p in range(2)
        }
        deleted = manager.run_retention()
        assert {str(tp): plan.size_bytes for tp, plan in deleted} == sizes
        built.retention_bytes = sizes
    return built


class PageParser(HTMLParser):
    """Collects, per partition section, the segment rectangles, chart points and history
    table rows; and every element and attribute seen (to check nothing hostile got in)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.partitions: list[str] = []
        self.segments: dict[str, list[dict[str, str]]] = defaultdict(list)
        self.points: dict[tuple[str, str], int] = defaultdict(int)
        self.rows: dict[tuple[str, str], list[list[str]]] = defaultdict(list)
        self.tags: set[str] = set()
        self.attributes: set[str] = set()
        self.text: list[str] = []
        self._partition = ""
        self._svg = ""
        self._table = ""
        self._row: list[str] | None = None
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {k: v or "" for k, v in attrs}
        self.tags.add(tag)
        self.attributes.update(values)
        classes = values.get("class", "").split()
        if tag == "section" and "partition" in classes:
            self._partition = values["data-partition"]
            self.partitions.append(self._partition)
        elif tag == "svg":
            self._svg = next((c for c in classes if c != "chart"), "")
        elif tag == "rect" and "seg" in classes and self._svg == "segments":
            self.segments[self._partition].append(values)
        elif tag == "g" and "point" in classes:
            self.points[(self._partition, self._svg)] += 1
        elif tag == "table":
            self._table = next((c for c in classes if c != "history"), "")
        elif tag == "tr":
            self._row = []
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None and self._row is not None:
            self._row.append("".join(self._cell))
            self._cell = None
        elif tag == "tr" and self._row is not None:
            self.rows[(self._partition, self._table)].append(self._row)
            self._row = None
        elif tag == "svg":
            self._svg = ""
        elif tag == "section" and self._partition:
            self._partition = ""

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if self._cell is not None:
            self._cell.append(data)


def parse_page(text: str) -> PageParser:
    """The page parsed (see :class:`PageParser`)."""
    parser = PageParser()
    parser.feed(text)
    parser.close()
    return parser
