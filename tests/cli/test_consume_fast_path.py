"""The fast path of ``seglog consume`` writes exactly the slow path's bytes.

Each log below is read twice in process, with ``SEGLOG_CONSUME_PATH=fast`` (the columnar
path wherever the output allows it, whatever the size) and ``=slow`` (record by record), and
stdout, stderr and the exit status must be identical: keys, null keys, tombstones, bytes that
are not UTF-8, characters JSON escapes, headers, compressed batches, LogAppendTime batches,
several segments, a damaged byte, limits and start offsets inside a batch, and a real
broker's log with transactional batches and control records.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path

import pytest
from cli_support import Cli, Result
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from corpus_location import NO_CORPUS_REASON, corpus_root
from seglog.engine.log_manager import open_log_dirs
from seglog.format.batch import encode_batch
from seglog.format.compression import CompressionType
from seglog.format.records import Header, Record, TimestampType

OUTPUTS: tuple[tuple[str, ...], ...] = (
    ("--format", "json"),
    (),
    ("--print-key",),
    ("--print-key", "--key-separator", " => ", "--null-value", "~"),
)
SPECIAL = 'quote " backslash \\ tab \t nl \n cr \r bell \x07 nul \x00 del \x7f é € 😀 </script>'


def both(cli: Cli, monkeypatch: pytest.MonkeyPatch, *args: str) -> Result:
    """Run ``args`` on both paths; assert they agree; return the fast one."""
    monkeypatch.setenv("SEGLOG_CONSUME_PATH", "slow")
    slow = cli.run(*args)
    monkeypatch.setenv("SEGLOG_CONSUME_PATH", "fast")
    fast = cli.run(*args)
    assert fast.out_bytes == slow.out_bytes
    assert fast.err == slow.err
    assert fast.status == slow.status
    return fast


def write_batches(data_dir: Path, batches: Sequence[bytes], configs: dict[str, str]) -> None:
    with open_log_dirs([data_dir]) as manager:
        manager.create_topic("t", 1, configs)
        log = manager.get_log("t", 0)
        for batch in batches:
            log.append(batch)


def records(pairs: Sequence[tuple[bytes | None, bytes | None]], ts: int = 1000) -> list[Record]:
    return [Record(i, ts + i, key, value) for i, (key, value) in enumerate(pairs)]


PLAIN = [
    (b"k1", b"v1"),
    (None, b"no key"),
    (b"tomb", None),
    (None, None),
    (b"", b""),
    (SPECIAL.encode(), SPECIAL.encode()),
    (b"\xff\xfe", b"v"),
    (b"k", b"\xc3\x28 not utf-8"),
    (b"k", b'{"json":"inside","a":[1,2]}'),
    (b"\xe2\x82", b"\xac split euro"),
]


def table() -> list[tuple[str, list[bytes], dict[str, str]]]:
    with_headers = [
        Record(0, 5, b"k", b"v", (Header("h", b"x"), Header("n", None))),
        Record(1, 6, b"k2", b"v2"),
    ]
    return [
        ("plain", [encode_batch(records(PLAIN))], {}),
        ("many batches", [encode_batch(records([(b"k%d" % i, b"v" * i)])) for i in range(50)], {}),
        (
            "compressed",
            [encode_batch(records(PLAIN), compression=c) for c in CompressionType if c.value],
            {},
        ),
        (
            "mixed compression",
            [
                encode_batch(records(PLAIN[:3])),
                encode_batch(records(PLAIN[3:]), compression=CompressionType.GZIP),
            ],
            {},
        ),
        ("headers", [encode_batch(records(PLAIN[:2])), encode_batch(with_headers)], {}),
        (
            "log append time",
            [
                encode_batch(records(PLAIN[:2])),
                encode_batch(records(PLAIN[2:4]), timestamp_type=TimestampType.LOG_APPEND_TIME),
            ],
            {},
        ),
        (
            "segments",
            [encode_batch(records([(b"k", b"x" * 300)] * 3)) for _ in range(20)],
            {"segment.bytes": "2048"},
        ),
    ]


@pytest.mark.parametrize(("name", "batches", "configs"), table(), ids=[t[0] for t in table()])
@pytest.mark.parametrize("output", OUTPUTS, ids=["json", "text", "key", "key-sep-null"])
def test_fast_path_is_byte_identical(
    cli: Cli,
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    batches: list[bytes],
    configs: dict[str, str],
    output: tuple[str, ...],
) -> None:
    write_batches(cli.data_dir, batches, configs)
    result = both(cli, monkeypatch, "consume", "t", *output)
    assert result.status == 0
    assert result.err.startswith("Processed a total of")
    assert result.out_bytes, name
    both(cli, monkeypatch, "consume", "t", *output, "--max-records", "3")
    both(cli, monkeypatch, "consume", "t", *output, "--partition", "0", "--offset", "1")


def test_damage_is_reported_at_the_same_point(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    batch = encode_batch(records(PLAIN))
    write_batches(cli.data_dir, [batch] * 6, {})
    segment = next((cli.data_dir / "t-0").glob("*.log"))
    data = bytearray(segment.read_bytes())
    data[4 * len(batch) - 5] ^= 0xFF  # in the fourth batch's records: its CRC fails
    segment.write_bytes(bytes(data))
    for output in OUTPUTS:
        result = both(cli, monkeypatch, "consume", "t", *output)
        assert result.status == 1
        assert "seglog: error:" in result.err
        assert result.out_bytes  # the batches before the damage were printed
        skipped = both(cli, monkeypatch, "consume", "t", *output, "--skip-corrupt")
        assert "WARNING: skipped" in skipped.err


@pytest.mark.skipif(corpus_root() is None, reason=NO_CORPUS_REASON)
def test_control_records_of_a_real_broker_log(
    cli: Cli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    root = corpus_root()
    assert root is not None
    source = root / "no-licence" / "danielowo-ksql-txn"
    if not source.is_dir():
        pytest.skip(f"{source} is absent from the corpus")
    copy = tmp_path / "txn"
    shutil.copytree(source, copy)
    topic = "_confluent-ksql-default__command_topic"
    for output in OUTPUTS:
        monkeypatch.setenv("SEGLOG_CONSUME_PATH", "slow")
        slow = cli.run("--data-dir", str(copy), "consume", topic, *output, data_dir=False)
        monkeypatch.setenv("SEGLOG_CONSUME_PATH", "fast")
        fast = cli.run("--data-dir", str(copy), "consume", topic, *output, data_dir=False)
        assert slow.status == fast.status == 0, slow.err
        assert fast.out_bytes == slow.out_bytes
        assert fast.err == slow.err == "Processed a total of 4 messages\n"


text_or_bytes = st.one_of(st.none(), st.text(max_size=40).map(str.encode), st.binary(max_size=20))


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(pairs=st.lists(st.tuples(text_or_bytes, text_or_bytes), min_size=1, max_size=30))
def test_random_keys_and_values(
    tmp_path_factory: pytest.TempPathFactory,
    capsysbinary: pytest.CaptureFixture[bytes],
    monkeypatch: pytest.MonkeyPatch,
    pairs: list[tuple[bytes | None, bytes | None]],
) -> None:
    cli = Cli(capsysbinary, monkeypatch, tmp_path_factory.mktemp("data"))
    write_batches(cli.data_dir, [encode_batch(records(pairs))], {})
    for output in OUTPUTS[:3]:
        both(cli, monkeypatch, "consume", "t", *output)


def test_orjson_escapes_every_code_point_as_json_dumps() -> None:
    """The fast path (orjson) and the slow path (json.dumps) escape strings identically."""
    import json

    import orjson

    text = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000)
    slow = json.dumps([text, {"k": text}], separators=(",", ":"), ensure_ascii=False)
    assert orjson.dumps([text, {"k": text}]) == slow.encode()


@pytest.mark.parametrize("numba", ["on", "off"])
def test_many_chunks_limits_and_damage_in_a_later_chunk(
    cli: Cli, monkeypatch: pytest.MonkeyPatch, numba: str
) -> None:
    """Small chunks: the JSON kernel runs a chunk ahead in its thread (two buffers in turn),
    and a limit, a start offset or damage in a later chunk still gives the slow path's bytes
    (the pieces before the hand-over are written, nothing after). With numba off the JSON
    lines are built by orjson instead, which hands headers and bytes that are not UTF-8 over."""
    from seglog.cli import consume_fast

    monkeypatch.setattr(consume_fast, "CHUNK_BYTES", 700)
    if numba == "off":
        monkeypatch.setenv("SEGLOG_DISABLE_NUMBA", "1")
    with_headers = Record(0, 5, b"k", b"v", (Header("h", b"x"), Header("h", None)))
    batches = [encode_batch(records(PLAIN)) for _ in range(12)]
    batches[7] = encode_batch([with_headers, *records(PLAIN)[1:]])
    assert all(len(batch) < 700 < 2 * len(batch) for batch in batches)  # a batch per chunk
    write_batches(cli.data_dir, batches, {})
    rendered: list[int] = []
    kernel = consume_fast._json_kernel
    monkeypatch.setattr(consume_fast, "_json_kernel", lambda *a: rendered.append(1) or kernel(*a))
    for extra in ((), ("--max-records", "45"), ("--partition", "0", "--offset", "33")):
        result = both(cli, monkeypatch, "consume", "t", "--format", "json", *extra)
        assert result.status == 0
    assert len(rendered) == (0 if numba == "off" else 12 + 5 + 9)  # chunks by the kernel
    segment = next((cli.data_dir / "t-0").glob("*.log"))
    data = bytearray(segment.read_bytes())
    data[sum(len(batch) for batch in batches[:10]) - 5] ^= 0xFF  # the tenth batch's CRC fails
    segment.write_bytes(bytes(data))
    damaged = both(cli, monkeypatch, "consume", "t", "--format", "json")
    assert damaged.status == 1
    assert damaged.out_bytes.count(b"\n") == 9 * len(PLAIN)
