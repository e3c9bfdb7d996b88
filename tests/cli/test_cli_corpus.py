"""``seglog --read-only`` on real broker directories (the corpus): reads all, writes nothing."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from cli_support import Cli

pytestmark = pytest.mark.compat


def log_dir_roots(corpus: Path) -> list[Path]:
    """Directories holding partition directories (a ``.log`` two levels down)."""
    return sorted({p.parent.parent for p in corpus.glob("*/**/*.log")})


def fingerprint(root: Path) -> dict[str, str]:
    """Every file under ``root`` and its sha256 (to prove nothing was written)."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in root.rglob("*")
        if p.is_file()
    }


def test_read_only_reads_every_broker_topic_and_writes_nothing(cli: Cli, corpus_dir: Path) -> None:
    roots = log_dir_roots(corpus_dir)
    assert roots
    consumed = 0
    for root in roots:
        before = fingerprint(root)
        listing = cli.run(
            "--read-only", "--data-dir", root, "topics", "list", "--json", data_dir=False
        )
        assert listing.status == 0, (root, listing.err)
        for topic in json.loads(listing.out)["topics"]:
            result = cli.run(
                "--read-only",
                "--data-dir",
                root,
                "consume",
                topic["name"],
                "--format",
                "json",
                data_dir=False,
            )
            assert result.status == 0, (root, topic, result.err)
            records = [json.loads(line) for line in result.lines]
            for partition in {r["partition"] for r in records}:
                offsets = [r["offset"] for r in records if r["partition"] == partition]
                assert offsets == sorted(set(offsets)), (root, topic, partition)
            consumed += len(records)
            described = cli.run(
                "--read-only",
                "--data-dir",
                root,
                "topics",
                "describe",
                topic["name"],
                "--json",
                data_dir=False,
            )
            assert described.status == 0, described.err
        assert (
            cli.run(
                "--read-only", "--data-dir", root, "log-dirs", "describe", data_dir=False
            ).status
            == 0
        )
        assert fingerprint(root) == before, root
    assert consumed > 0
