"""The tiered-storage formats: ``__remote_log_metadata`` values, ``.rsm-manifest``, chunk sizes."""

from __future__ import annotations

import base64
import json

import pytest

from seglog.errors import (
    CorruptRemoteObjectError,
    EncryptedRemoteSegmentError,
    IcebergRemoteSegmentError,
)
from seglog.format.remote_log_metadata import (
    RemoteLogSegmentId,
    RemoteLogSegmentMetadataRecord,
    RemoteLogSegmentMetadataSnapshotRecord,
    RemoteLogSegmentMetadataUpdateRecord,
    RemotePartitionDeleteMetadataRecord,
    TopicIdPartition,
    decode_remote_log_metadata,
    encode_remote_log_metadata,
)
from seglog.format.rsm_manifest import decode_chunk_sizes, encode_chunk_sizes, parse_manifest

TIP = TopicIdPartition("topic1", "lZ6vvmajTWKDBUTV6SQAtQ", 42)
SID = RemoteLogSegmentId(TIP, "adh9f8BMS4anaUnD8KWfWg")


def test_upstream_chunk_sizes_fixture() -> None:
    # The Aiven plugin's own test vector for ChunkSizesBinaryCodec.
    raw = base64.b64decode("KLUv/SAPeQAAAAAAAwAAAAoBAAoAAAAe")
    assert decode_chunk_sizes(raw, name="fixture") == [10, 20, 30]


@pytest.mark.parametrize("sizes", [[], [7], [5, 9], [4096, 4000, 300, 17], [70000, 1, 65536]])
def test_chunk_sizes_round_trip(sizes: list[int]) -> None:
    assert decode_chunk_sizes(encode_chunk_sizes(sizes), name="x") == sizes


def test_metadata_records_round_trip_and_hand_bytes() -> None:
    records = [
        RemoteLogSegmentMetadataRecord(
            1, SID, 0, 1000, 2, 10**9, 2 * 10**9, ((0, 0), (1, 200)), 4096, b"\x00", 1,
            txn_index_empty=True, broker_leader_epoch=7,
        ),
        RemoteLogSegmentMetadataUpdateRecord(
            1, SID, 2, 5, None, 3, broker_leader_epoch=4, end_offset=99
        ),
        RemotePartitionDeleteMetadataRecord(0, TIP, 2, 5, 0),
        RemoteLogSegmentMetadataSnapshotRecord(0, SID.id, 0, 9, 1, 2, 3, ((0, 0),), 10, None, 1),
    ]  # fmt: skip
    for record in records:
        assert decode_remote_log_metadata(encode_remote_log_metadata(record)) == record
    # apiKey 2 v0 by hand: frame 1, apiKey 2, version 0, name "t", uuid, partition 3, tags,
    # brokerId 5, eventTimestampMs 6, state 2, tags.
    value = (
        b"\x01\x02\x00" + b"\x02t" + bytes(16) + b"\x00\x00\x00\x03\x00"
        + b"\x00\x00\x00\x05" + (6).to_bytes(8, "big") + b"\x02\x00"
    )  # fmt: skip
    decoded = decode_remote_log_metadata(value)
    assert decoded == RemotePartitionDeleteMetadataRecord(
        0, TopicIdPartition("t", "AAAAAAAAAAAAAAAAAAAAAA", 3), 5, 6, 2
    )
    # an unknown tag is skipped (Kafka's rule for tagged fields)
    assert decode_remote_log_metadata(value[:-1] + b"\x01\x09\x02ab") == decoded


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (b"\x00\x00\x00", "frame version 0"),
        (b"\x01\x07\x00", "apiKey 7"),
        (b"\x01\x02\x02", "version 2 is newer"),
        (b"\x01\x02\x00\x02t", "needs"),
    ],
)
def test_metadata_errors_name_the_record(value: bytes, reason: str) -> None:
    with pytest.raises(CorruptRemoteObjectError, match=reason) as info:
        decode_remote_log_metadata(value, where="__remote_log_metadata-3 offset 17")
    assert info.value.path == "__remote_log_metadata-3 offset 17"
    assert info.value.position is not None


def test_bad_state_and_leftover_bytes() -> None:
    good = encode_remote_log_metadata(RemotePartitionDeleteMetadataRecord(0, TIP, 1, 2, 1))
    with pytest.raises(CorruptRemoteObjectError, match="bytes left"):
        decode_remote_log_metadata(good + b"\x00")
    with pytest.raises(CorruptRemoteObjectError, match="RemotePartitionDeleteState 9"):
        decode_remote_log_metadata(good[:-2] + b"\x09\x00")


MANIFEST = {
    "version": "1",
    "chunkIndex": {"type": "fixed", "originalChunkSize": 4194304, "originalFileSize": 1000,
                   "transformedChunkSize": 4194304, "finalTransformedChunkSize": 1000},
    "segmentIndexes": {"offset": {"position": 0, "size": 1},
                       "timestamp": {"position": 1, "size": 1},
                       "producerSnapshot": {"position": 2, "size": 1},
                       "leaderEpoch": {"position": 3, "size": 1}, "transaction": None},
    "compression": False,
    "remoteLogSegmentMetadata": {
        "remoteLogSegmentId": {"topicIdPartition": {"topicId": "lZ6vvmajTWKDBUTV6SQAtQ",
                               "topicPartition": {"topic": "topic1", "partition": 42}},
                               "id": "adh9f8BMS4anaUnD8KWfWg"},
        "startOffset": 0, "endOffset": 1000, "maxTimestampMs": 1000000000, "brokerId": 2,
        "eventTimestampMs": 2000000000, "segmentLeaderEpochs": {"0": 100, "1": 200, "2": 300}},
}  # fmt: skip


def test_manifest_as_the_plugin_writes_it() -> None:
    manifest = parse_manifest(json.dumps(MANIFEST).encode(), name="m")
    assert manifest.chunk_index.transformed_sizes == (1000,)
    assert manifest.segment_indexes is not None
    assert manifest.segment_indexes["leaderEpoch"] == (3, 1)
    assert manifest.segment_indexes["transaction"] is None
    assert manifest.metadata is not None
    assert manifest.metadata.segment_leader_epochs == ((0, 100), (1, 200), (2, 300))
    assert manifest.metadata.end_offset == 1000


def test_encrypted_and_iceberg_manifests_are_refused() -> None:
    encrypted = dict(MANIFEST, encryption={"dataKey": "k:AAAA", "aad": "AAAA"})
    with pytest.raises(EncryptedRemoteSegmentError, match="encrypted") as info:
        parse_manifest(
            json.dumps(encrypted).encode(), name="b/t-x/0/00000000000000000000-a.rsm-manifest"
        )
    assert "00000000000000000000-a.rsm-manifest" in str(info.value)
    with pytest.raises(IcebergRemoteSegmentError, match="Iceberg"):
        parse_manifest(json.dumps(dict(MANIFEST, segmentFormat="iceberg")).encode(), name="m")
    no_chunks = {k: v for k, v in MANIFEST.items() if k != "chunkIndex"}
    with pytest.raises(IcebergRemoteSegmentError):
        parse_manifest(json.dumps(no_chunks).encode(), name="m")


def test_manifest_errors_name_the_field() -> None:
    with pytest.raises(CorruptRemoteObjectError, match="not JSON") as info:
        parse_manifest(b'{"version": ', name="obj")
    assert info.value.path == "obj" and info.value.position is not None
    bad = json.loads(json.dumps(MANIFEST))
    bad["chunkIndex"]["originalFileSize"] = "x"
    with pytest.raises(CorruptRemoteObjectError, match=r"chunkIndex\.originalFileSize"):
        parse_manifest(json.dumps(bad).encode(), name="obj")
    with pytest.raises(CorruptRemoteObjectError, match="version"):
        parse_manifest(json.dumps(dict(MANIFEST, version="2")).encode(), name="obj")
