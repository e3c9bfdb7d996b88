"""``seglog verify`` on a transactional topic: the transaction problem kinds in its text and
JSON output (each check's cases are in ``tests/engine/test_verify_transactions.py``)."""

from __future__ import annotations

import json

from cli_support import Cli

from seglog.engine.log_manager import open_log_dirs
from seglog.format.checkpoint import encode_offset_checkpoint
from seglog.format.topic_names import TopicPartition
from seglog.storage.log_dir import CLEANER_OFFSET_CHECKPOINT
from seglog.testing.transactions import append_transactional


def test_aborted_data_below_the_checkpoint_is_reported(cli: Cli) -> None:
    with open_log_dirs([cli.data_dir]) as manager:
        manager.create_topic("c", 1, {"cleanup.policy": "compact"})
        log = manager.get_log("c", 0)
        append_transactional(log, 1, 0, 0, [(b"a", b"1")])  # 0, aborted below
        log.append_marker(1, 0, commit=False, coordinator_epoch=0)  # 1
        append_transactional(log, 2, 0, 0, [(b"b", b"2")])  # 2, committed
        log.append_marker(2, 0, commit=True, coordinator_epoch=0)  # 3
        directory = log.directory
    assert cli.ok("verify", "c").lines[0].startswith("c-0: OK (")

    checkpoint = cli.data_dir / CLEANER_OFFSET_CHECKPOINT
    checkpoint.write_bytes(encode_offset_checkpoint({TopicPartition("c", 0): 4}))
    result = cli.run("verify", "c")
    assert result.status == 1
    assert result.lines[0].startswith("c-0: 1 problem (")
    segment = directory / "00000000000000000000.log"
    assert result.lines[1].startswith(f"  aborted-data-retained  {segment}  position 0  offset 0")
    document = json.loads(cli.run("verify", "c", "--json").out)
    [problem] = document["partitions"][0]["problems"]
    assert problem["kind"] == "aborted-data-retained"
    assert "ABORT marker at offset 1" in problem["message"]
