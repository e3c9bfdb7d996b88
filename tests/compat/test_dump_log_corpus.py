"""``seglog dump-log`` over every broker-written segment, index and KRaft snapshot of the corpus.

The files are read in place under ``../shared/corpus`` (never copied; see PROVENANCE.md
there). Each must dump with status 0, no error, no invalid trailing bytes, every batch's CRC
valid, and every index entry matching its ``.log``, except for what the corpus documents:

* compacted logs have offset gaps, which Kafka's tool reports as "Non-consecutive offsets";
* ``broker/itumelengmogase-cp-kraft/__cluster_metadata-0`` holds ``.index``/``.timeindex``
  without their 10 MB ``.log`` (not in the snapshot): dumped unchecked, with a warning;
* ``smartassets-connect-compacted/docker-connect-configs-0/…069.timeindex`` was closed by
  Kafka 2.3, whose final time index entry named the offset of the max-timestamp *record*
  (105) rather than its batch's last offset (106); Kafka's own tool reports it the same way.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from corpus_location import corpus_params, corpus_root
from seglog.cli.main import main
from seglog.format.index import parse_offset_index, parse_time_index
from seglog.format.names import LOG_SUFFIX, name_prefix, offset_from_file_name
from seglog.format.reader import read_batches

pytestmark = pytest.mark.compat

SUFFIXES = (".log", ".index", ".timeindex", ".checkpoint")
# corpus path -> the exact summary lines Kafka's tool would print for it (see docstring)
KNOWN_FINDINGS = {
    "no-licence/smartassets-connect-compacted/docker-connect-configs-0/"
    "00000000000000000069.timeindex": [
        "The following indexed offsets are not found in the log.",
        "Indexed offset: 105, found log offset: 106",
    ],
}


CORPUS = corpus_params(SUFFIXES)


def _dump(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str], list[str]]:
    status = main(["dump-log", *args])
    captured = capsys.readouterr()
    return status, captured.out.splitlines(), captured.err.splitlines()


def _relative(path: Path) -> str:
    root = corpus_root()
    assert root is not None
    return path.relative_to(root).as_posix()


def _sibling_log(path: Path) -> Path:
    return path.with_name(name_prefix(path.name) + LOG_SUFFIX)


def _without_non_consecutive(err: list[str]) -> list[str]:
    """Drop "Non-consecutive offsets" sections (offset gaps of compacted logs)."""
    kept: list[str] = []
    in_section = False
    for line in err:
        if line.startswith("Non-consecutive offsets in "):
            in_section = True
        elif not (in_section and line.startswith("  ")):
            in_section = False
            kept.append(line)
    return kept


@pytest.mark.parametrize("path", CORPUS)
def test_corpus_file_dumps_cleanly(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = _dump(capsys, "--deep-iteration", str(path))
    assert status == 0, err
    assert out[0] == f"Dumping {path}"
    assert not any(line.startswith("Found ") and "invalid bytes" in line for line in out)
    assert not any(line.startswith("seglog: error") for line in err), err
    remaining = _without_non_consecutive(err)
    if path.suffix in (".index", ".timeindex") and not _sibling_log(path).exists():
        assert len(remaining) == 1 and remaining[0].startswith("seglog: warning: ")
        assert "not found" in remaining[0]
        remaining = []
    assert remaining == KNOWN_FINDINGS.get(_relative(path), [])


@pytest.mark.parametrize("path", CORPUS)
def test_corpus_file_json_matches_the_decoder(
    path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, lines, err = _dump(capsys, "--json", "--deep-iteration", str(path))
    assert status == 0, err
    objects = [json.loads(line) for line in lines]
    assert all(obj["file"] == str(path) for obj in objects)
    data = path.read_bytes()
    if path.suffix in (".log", ".checkpoint"):
        batches, end = read_batches(data)
        assert end.is_clean
        assert [obj["position"] for obj in objects] == [b.position for b in batches]
        assert [obj["lastOffset"] for obj in objects] == [b.last_offset for b in batches]
        assert [[r["offset"] for r in obj["records"]] for obj in objects] == [
            [r.offset for r in b.records()] for b in batches
        ]
        assert all(obj["isvalid"] for obj in objects), "broker-written batches have valid CRCs"
    elif path.suffix == ".index":
        base_offset = offset_from_file_name(path.name)
        entries = parse_offset_index(data, base_offset)
        assert [(o["offset"], o["position"]) for o in objects] == [
            (e.offset, e.position) for e in entries
        ]
    else:
        base_offset = offset_from_file_name(path.name)
        time_entries = parse_time_index(data, base_offset)
        assert [(o["timestamp"], o["offset"]) for o in objects] == [
            (e.timestamp, e.offset) for e in time_entries
        ]


@pytest.mark.parametrize(
    "path", [p for p in CORPUS if p.values[0] is None or p.values[0].suffix == ".index"]
)
def test_corpus_offset_index_entries_point_at_batch_starts(path: Path) -> None:
    """Independent of the dump: each entry's position starts the batch ending at its offset."""
    log_path = _sibling_log(path)
    if not log_path.exists():
        pytest.skip(f"{log_path.name} is not in the corpus snapshot")
    base_offset = offset_from_file_name(path.name)
    entries = parse_offset_index(path.read_bytes(), base_offset, path=str(path))
    batches, end = read_batches(log_path.read_bytes())
    assert end.is_clean
    last_offset_at = {batch.position: batch.last_offset for batch in batches}
    assert entries, "a broker writes an entry per index.interval.bytes of log"
    for entry in entries:
        assert last_offset_at.get(entry.position) == entry.offset, entry


@pytest.mark.parametrize(
    "path", [p for p in CORPUS if p.values[0] is None or p.values[0].suffix == ".timeindex"]
)
def test_corpus_time_index_entries_are_increasing(path: Path) -> None:
    """Timestamps strictly increase and offsets never decrease, as Kafka appends them."""
    base_offset = offset_from_file_name(path.name)
    entries = parse_time_index(path.read_bytes(), base_offset, path=str(path))
    for previous, entry in itertools.pairwise(entries):
        assert entry.timestamp > previous.timestamp
        assert entry.offset >= previous.offset
    assert all(entry.offset >= base_offset for entry in entries)
