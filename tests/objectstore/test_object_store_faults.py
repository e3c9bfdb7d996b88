"""The object-store seam under faults (a real S3 API, moto's server, behind a fault-injecting
``pyarrow.fs`` handler): a failed GET, a timeout, an object that vanished or changed between
the listing and the read give typed errors naming the object, and the mirror never holds a
torn or stale file, so a read never returns wrong rows."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import boto3
import pyarrow as pa
import pyarrow.fs as pafs
import pytest

from seglog.clock import ManualClock
from seglog.engine.log_manager import open_log_dirs
from seglog.storage import object_store
from seglog.storage.log_dir_mirror import mirror
from seglog.storage.object_store import ObjectLocation
from seglog.storage.remote_copy_store import ObjectStoreError, S3Settings
from support.cleaning_data import fill
from support.s3_server import upload_tree


class Faulty(pafs.FileSystemHandler):
    """Delegates to a real file system; ``on_open(path)`` runs before each object is opened
    for reading and ``on_read(path, position)`` before each ranged read (either may raise)."""

    def __init__(
        self, real: Any, on_open: Callable[[str], None], on_read: Callable[[str, int], None]
    ) -> None:
        self.real, self.on_open, self.on_read = real, on_open, on_read

    def get_type_name(self) -> str:
        return "faulty"

    def normalize_path(self, path: str) -> str:
        return str(self.real.normalize_path(path))

    def equals(self, other: Any) -> bool:
        return self is other

    def get_file_info(self, paths: list[str]) -> Any:
        return self.real.get_file_info(paths)

    def get_file_info_selector(self, selector: Any) -> Any:
        return self.real.get_file_info(selector)

    def open_input_file(self, path: str) -> Any:
        self.on_open(path)
        real = self.real.open_input_file(path)
        handler = self

        class Reader(io.RawIOBase):
            """A file-like view of the real object that runs ``on_read`` per read."""

            def __init__(self) -> None:
                self.position = 0

            def readable(self) -> bool:
                return True

            def seekable(self) -> bool:
                return True

            def seek(self, offset: int, whence: int = 0) -> int:
                base = {0: 0, 1: self.position, 2: int(real.size())}[whence]
                self.position = base + offset
                return self.position

            def tell(self) -> int:
                return self.position

            def read(self, size: int = -1) -> bytes:
                handler.on_read(path, self.position)
                left = int(real.size()) - self.position
                want = left if size < 0 else min(size, left)
                data = bytes(real.read_at(want, self.position))
                self.position += len(data)
                return data

            def close(self) -> None:
                real.close()
                super().close()

        return pa.PythonFile(Reader(), mode="r")

    def create_dir(self, path: str, recursive: bool) -> None:
        raise AssertionError("the seam must not write")

    delete_dir = delete_dir_contents = delete_root_dir_contents = delete_file = create_dir  # type: ignore[assignment]
    move = copy_file = open_output_stream = open_append_stream = open_input_stream = create_dir  # type: ignore[assignment]


@pytest.fixture
def location(
    s3_endpoint: str, s3_bucket: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> ObjectLocation:
    monkeypatch.setenv("SEGLOG_MIRROR_DIR", str(tmp_path / "mirror"))
    clock = ManualClock(1_700_000_000_000)
    data = tmp_path / "data"
    with open_log_dirs([data], clock=clock) as manager:
        fill(manager, clock, keys=30, records=200, seed=2)
    uri = upload_tree(s3_endpoint, s3_bucket, "d", data)
    return ObjectLocation(uri, S3Settings(endpoint_url=s3_endpoint))


def inject(location: ObjectLocation, monkeypatch: pytest.MonkeyPatch, **hooks: Any) -> None:
    real = location.filesystem()
    faulty = pafs.PyFileSystem(
        Faulty(real, hooks.get("on_open", lambda p: None), hooks.get("on_read", lambda p, o: None))
    )
    key = next(k for k, v in object_store._FILESYSTEMS.items() if v is real)
    monkeypatch.setitem(object_store._FILESYSTEMS, key, faulty)


def torn_or_stale(root: Path, location: ObjectLocation) -> list[str]:
    """Mirror files whose bytes differ from the object's (there must be none)."""
    client = boto3.client("s3", endpoint_url=location.settings.endpoint_url)
    bucket, _, prefix = location.root.partition("/")
    bad = []
    for path in root.rglob("*"):
        if path.is_file() and not path.name.startswith("."):
            key = f"{prefix}/{path.relative_to(root).as_posix()}"
            if client.get_object(Bucket=bucket, Key=key)["Body"].read() != path.read_bytes():
                bad.append(key)
    return bad


def is_segment(path: str) -> bool:
    return path.endswith(".log") and "prices-0" in path


@pytest.mark.parametrize(
    "fault,expected",
    [
        ("failed-get", "reading s3://.*prices-0/.*\\.log failed"),
        ("timeout", "reading s3://.*prices-0/.*\\.log at byte 0 failed"),
        ("vanished", "vanished while it was being read"),
        ("changed", "changed while it was being read"),
    ],
)
def test_faults_give_typed_errors_and_no_wrong_bytes(
    location: ObjectLocation, monkeypatch: pytest.MonkeyPatch, fault: str, expected: str
) -> None:
    client = boto3.client("s3", endpoint_url=location.settings.endpoint_url)
    bucket, _, _ = location.root.partition("/")

    def on_open(path: str) -> None:
        if not is_segment(path):
            return
        key = path.partition("/")[2]
        if fault == "failed-get":
            raise OSError("503 Slow Down (injected)")
        if fault == "vanished":
            client.delete_object(Bucket=bucket, Key=key)
        if fault == "changed":
            client.put_object(Bucket=bucket, Key=key, Body=b"x" * 10)

    def on_read(path: str, position: int) -> None:
        if fault == "timeout" and is_segment(path):
            raise OSError("When reading information: curlCode 28, Timeout was reached")

    inject(location, monkeypatch, on_open=on_open, on_read=on_read)
    with pytest.raises(ObjectStoreError, match=expected):
        mirror(location)
    root = object_store_root(location)
    assert torn_or_stale(root, location) == []


def object_store_root(location: ObjectLocation) -> Path:
    from seglog.storage.log_dir_mirror import mirror_root

    return mirror_root(location)


def test_a_replaced_object_is_fetched_again(location: ObjectLocation) -> None:
    root = mirror(location)
    client = boto3.client("s3", endpoint_url=location.settings.endpoint_url)
    bucket, _, prefix = location.root.partition("/")
    checkpoint = f"{prefix}/recovery-point-offset-checkpoint"
    client.put_object(Bucket=bucket, Key=checkpoint, Body=b"0\n0\n")
    mirror(location)
    assert (root / "recovery-point-offset-checkpoint").read_bytes() == b"0\n0\n"
    assert torn_or_stale(root, location) == []
