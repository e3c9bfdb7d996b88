"""The Spark source never returns a shortened partition at damage: a flipped byte in a
closed segment, in a record or in the base offset (outside the CRC), fails the read with a
message naming the partition and the offset being read (issue: "no silent stops")."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from seglog.engine.log_manager import open_log_dirs
from seglog.format.reader import read_batches

pytestmark = pytest.mark.spark

TOPIC = "t"


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("spark-corrupt") / "data"
    with open_log_dirs([root]) as manager:
        manager.create_topic(TOPIC, 1, {"segment.bytes": "1024"})
        log = manager.get_log(TOPIC, 0)
        for i in range(0, 90, 3):
            log.append_records([(b"key-%d" % j, b"value-%05d" % j) for j in range(i, i + 3)])
    return root


def damaged_copy(template: Path, work: Path, field_offset: int, xor: int) -> Path:
    """A copy whose second closed segment has one byte of its second batch flipped."""
    shutil.copytree(template, work)
    victim = sorted((work / f"{TOPIC}-0").glob("*.log"))[1]
    data = bytearray(victim.read_bytes())
    batches, _ = read_batches(bytes(data))
    data[batches[1].position + field_offset] ^= xor
    victim.write_bytes(bytes(data))
    return work


def read_all(spark: Any, root: Path) -> list[int]:
    frame = spark.read.format("seglog").option("path", str(root)).option("subscribe", TOPIC)
    return sorted(row.offset for row in frame.load().select("offset").collect())


def test_an_undamaged_copy_reads_whole(spark: Any, template: Path) -> None:
    assert read_all(spark, template) == list(range(90))


@pytest.mark.parametrize(
    ("field_offset", "xor", "what"),
    [(70, 0x01, r"(?i)crc"), (7, 0x02, r"follow|not above|backwards")],
    ids=["record-byte", "base-offset"],
)
def test_damage_fails_the_read(
    spark: Any, template: Path, tmp_path: Path, field_offset: int, xor: int, what: str
) -> None:
    root = damaged_copy(template, tmp_path / "work", field_offset, xor)
    with pytest.raises(Exception, match=what) as caught:
        read_all(spark, root)
    assert f"{TOPIC}-0" in str(caught.value) or f"{TOPIC}-0" in repr(caught.value)
