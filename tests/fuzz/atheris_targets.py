"""Coverage-guided fuzzing (atheris / libFuzzer) of seglog's parsers of untrusted bytes.

Rule, as in the hypothesis fuzz tests: a parser returns data or raises one of seglog's typed
errors (``SeglogError``), nothing else. Any other exception is a finding: libFuzzer stops,
prints the traceback and writes the input to ``crash-<sha1>`` in the working directory.

Targets (:data:`TARGETS`): ``batches`` (the record-batch reader with CRC on and off, records
decoded, the columnar scanner), ``index`` (``.index`` / ``.timeindex`` / ``.txnindex``
parsers and checks), ``checkpoints`` (offset, leader-epoch, partition.metadata,
meta.properties, clean-shutdown, Java properties, ``seglog-topics.json`` and the cleaner
history), ``produce_json`` (``seglog produce --format json`` lines), ``config`` (topic
overrides and broker properties from properties text), ``request_decoder`` (Kafka request
frames: ``FrameReader``, request headers and every request body the protocol layer knows).

Usage (atheris is in the ``reliability`` extra; ``make reliability`` installs it)::

    python tests/fuzz/atheris_targets.py [--seconds N] [--report FILE] [TARGET ...]

runs each target (default: all) for ``N`` seconds (default 30) in its own child process and
prints one line per target: ``TARGET: OK, R runs in S s`` (R: libFuzzer's executed inputs)
or ``TARGET: FAILED ...`` with the child's output. With ``--report`` each target's figures
are appended as JSON lines (``{"test": "atheris-TARGET", "runs": R, ...}``). Exit status 0
when every target ran clean, 1 otherwise. ``python tests/fuzz/atheris_targets.py --child
TARGET -- LIBFUZZER_ARGS`` is the child.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from seglog.errors import SeglogError

Target = Callable[[bytes], None]


def fuzz_batches(data: bytes) -> None:
    """Record batches: reader (CRC on/off), records, the columnar scanner."""
    from seglog.format.columnar import scan_columns
    from seglog.format.reader import read_batches

    for verify in (True, False):
        try:
            batches, _ = read_batches(data, verify_crc=verify)
            for batch in batches:
                batch.records()
        except SeglogError:
            pass
    with contextlib.suppress(SeglogError):
        scan_columns(data, use_numba=False, verify_crc=True, include_control=True)


def fuzz_index(data: bytes) -> None:
    """``.index``, ``.timeindex`` and ``.txnindex`` parsers and checks."""
    from seglog.format import index

    for parse, validate, sanity in (
        (index.parse_offset_index, index.validate_offset_index, index.sanity_check_offset_index),
        (index.parse_time_index, index.validate_time_index, index.sanity_check_time_index),
    ):
        for zero_tail in (True, False):
            try:
                entries = parse(data, 100, path="x", stop_at_zero_tail=zero_tail)
                validate(entries, 100, path="x")  # type: ignore[arg-type]
            except SeglogError:
                pass
        with contextlib.suppress(SeglogError):
            sanity(data, 100, path="x")
    with contextlib.suppress(SeglogError):
        index.parse_txn_index(data, path="x")


def fuzz_checkpoints(data: bytes) -> None:
    """Checkpoint files, properties text and seglog's JSON metadata files."""
    from seglog.format import checkpoint
    from seglog.format.properties import parse_properties
    from seglog.storage.log_dir import CleanerHistory, TopicsFile

    parsers: list[Callable[[bytes], object]] = [
        lambda b: checkpoint.parse_offset_checkpoint(b, path="c"),
        lambda b: checkpoint.parse_leader_epoch_checkpoint(b, path="c"),
        lambda b: checkpoint.parse_partition_metadata(b, path="c"),
        lambda b: checkpoint.parse_meta_properties(b, path="c"),
        lambda b: checkpoint.parse_clean_shutdown(b, path="c"),
        lambda b: parse_properties(b.decode("latin-1")),
        lambda b: TopicsFile.decode(b, path="c"),
        lambda b: CleanerHistory.decode(b, path="c"),
    ]
    for parse in parsers:
        with contextlib.suppress(SeglogError):
            parse(data)


def fuzz_produce_json(data: bytes) -> None:
    """One line of ``seglog produce --format json`` input."""
    from seglog.cli.produce import parse_json_line

    with contextlib.suppress(SeglogError):
        parse_json_line(1, data, frozenset({0, 1, 2}))


def fuzz_config(data: bytes) -> None:
    """Topic overrides and broker properties, from Java properties text."""
    from seglog.config import BrokerConfig, LogConfig
    from seglog.format.properties import parse_properties

    try:
        props = parse_properties(data.decode("utf-8", "replace"))
    except SeglogError:
        return
    for build in (LogConfig.from_overrides, BrokerConfig.from_properties):
        with contextlib.suppress(SeglogError):
            build(props)


def fuzz_request_decoder(data: bytes) -> None:
    """Kafka request frames as the server reads them: ``FrameReader`` over the bytes as a
    stream, ``decode_request(...).decode_body()`` on each frame and on the bytes as one frame,
    and the first two bytes choosing a served API version whose body the rest is."""
    import struct

    from seglog.protocol import codec
    from seglog.protocol.framing import REQUESTS, FrameReader, decode_request

    frames = [data]
    with contextlib.suppress(SeglogError):
        frames += FrameReader(1 << 16).feed(data)
    for frame in frames:
        with contextlib.suppress(SeglogError):
            decode_request(frame).decode_body()
    if len(data) >= 2:
        keys = sorted(REQUESTS)
        spec = REQUESTS[keys[data[0] % len(keys)]]
        low, high = spec.valid_versions
        version = low + data[1] % (high - low + 1)
        with contextlib.suppress(SeglogError):
            codec.decode(spec.cls, data, version, offset=2)
        header = struct.pack(">hhih", spec.api_key, version, 0, -1)
        if spec.is_flexible(version):
            header += b"\x00"
        with contextlib.suppress(SeglogError):
            decode_request(header + data[2:]).decode_body()


TARGETS: dict[str, Target] = {
    "batches": fuzz_batches,
    "index": fuzz_index,
    "checkpoints": fuzz_checkpoints,
    "produce_json": fuzz_produce_json,
    "config": fuzz_config,
    "request_decoder": fuzz_request_decoder,
}


def child(target: str, libfuzzer_args: list[str]) -> None:
    """Run one target under atheris (never returns: libFuzzer exits the process)."""
    import atheris

    test_one = TARGETS[target]
    # Instrument seglog's modules only (instrument_all would rewrite every imported library
    # and take minutes): the target's first call imports them inside the block.
    with atheris.instrument_imports(include=["seglog"]):
        test_one(b"")
    atheris.Setup([sys.argv[0], *libfuzzer_args], test_one)
    atheris.Fuzz()


_DONE = re.compile(rb"Done (\d+) runs in (\d+) second")


def run_target(target: str, seconds: int, workdir: Path) -> tuple[bool, int, str]:
    """Fuzz ``target`` for ``seconds`` in a child; returns (clean, runs, child's output tail)."""
    argv = [sys.executable, __file__, "--child", target, "--"]
    argv += [f"-max_total_time={seconds}", "-rss_limit_mb=2048", "-timeout=20"]
    result = subprocess.run(
        argv, cwd=workdir, capture_output=True, timeout=seconds + 120, check=False
    )
    output = result.stdout + result.stderr
    found = _DONE.search(output)
    runs = int(found.group(1)) if found else 0
    tail = output[-3000:].decode("utf-8", "replace")
    return result.returncode == 0 and found is not None, runs, tail


def main(argv: list[str] | None = None) -> int:
    """Command line of the module docstring; returns the exit status."""
    args_in = sys.argv[1:] if argv is None else argv
    if args_in[:1] == ["--child"]:
        rest = args_in[3:] if len(args_in) > 2 and args_in[2] == "--" else args_in[2:]
        child(args_in[1], rest)
        return 0
    parser = argparse.ArgumentParser(prog="atheris_targets.py")
    parser.add_argument("targets", nargs="*", default=[], help=f"of {sorted(TARGETS)}")
    parser.add_argument("--seconds", type=int, default=30)
    parser.add_argument("--report", type=Path, default=None)
    parser.add_argument("--workdir", type=Path, default=Path("."))
    args = parser.parse_args(args_in)
    unknown = sorted(set(args.targets) - set(TARGETS))
    if unknown:
        parser.error(f"unknown targets {unknown}; choose from {sorted(TARGETS)}")
    status = 0
    args.workdir.mkdir(parents=True, exist_ok=True)
    for target in args.targets or list(TARGETS):
        clean, runs, tail = run_target(target, args.seconds, args.workdir)
        if clean:
            print(f"{target}: OK, {runs} runs in {args.seconds} s", flush=True)
        else:
            status = 1
            print(f"{target}: FAILED after {runs} runs\n{tail}", flush=True)
        if args.report is not None:
            with args.report.open("a", encoding="utf-8") as handle:
                figures = {"test": f"atheris-{target}", "runs": runs, "seconds": args.seconds}
                handle.write(json.dumps({**figures, "clean": clean}, sort_keys=True) + "\n")
    return status


if __name__ == "__main__":
    sys.exit(main())
