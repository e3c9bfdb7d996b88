"""The Pulsar-style compacted copy of a partition in an S3 bucket (a location seglog owns).

Object layout under a target prefix (the same names as the local layout of
:mod:`seglog.storage.compacted_copy`, so a copy downloaded into a partition directory is an
ordinary local copy)::

    s3://<bucket>/<prefix>/<topic>-<partition>/compaction/
        published.json                        the manifest: the local publication's fields
                                              plus "files": [[name, size], ...]
        copy-<horizon, 20 digits>-<8 hex>/    one copy's Kafka-format segment files
            00000000000000000000.log, .index, .timeindex, ...

An object store has no rename, so a copy is published by **one conditional PUT of the
manifest** (S3's ``If-None-Match: *`` when no copy is published yet, ``If-Match: <ETag>`` of
the manifest the writer started from otherwise):

1. The writer reads the manifest and its ETag (none: no copy yet).
2. It uploads a new copy under a fresh ``copy-*`` name. A crash leaves an unpublished copy
   that no reader ever looks at (readers list nothing: they read the manifest and fetch the
   files it names); :meth:`RemoteCopyStore.sweep` removes such copies after a grace period.
3. It PUTs the manifest conditionally. Of two writers that started from the same manifest
   exactly one PUT succeeds; the other gets ``412 Precondition Failed``, which
   :class:`PublicationConflictError` reports, and removes its own copy. A reader sees the old
   manifest or the new one, each naming a whole copy.
4. The superseded copy is not deleted at once (a reader may be fetching it): ``sweep`` removes
   copies no manifest names once their newest object is older than the grace period.

Invariant: every file a published manifest names was fully uploaded before the manifest, and
is never overwritten (copy names are unique). A Kafka tiered-storage bucket is never written:
this store is only ever given a seglog-owned prefix.

Credentials and endpoint: :class:`S3Settings`, from explicit options first, then the standard
AWS environment variables and files (``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``,
``AWS_SESSION_TOKEN``, ``AWS_REGION``/``AWS_DEFAULT_REGION``, ``AWS_ENDPOINT_URL``,
``AWS_PROFILE``), which boto3 reads itself. boto3 is used because ``pyarrow.fs`` cannot send
conditional PUTs; its clients do not pickle, so each process builds its own from the
(picklable) settings.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from seglog.errors import CorruptCheckpointError, SeglogError
from seglog.storage import fileops
from seglog.storage.atomic import write_file_atomically
from seglog.storage.compacted_copy import (
    COMPACTION_DIR,
    COPY_PREFIX,
    FILE_MAX_BYTES,
    PUBLISHED_FILE,
    Publication,
)

TRANSFER_CHUNK_BYTES = 8 * 1024 * 1024  # upload parts and download ranges: >= 8 MiB each
SWEEP_GRACE_MS_DEFAULT = 10 * 60 * 1000


class ObjectStoreError(SeglogError):
    """An object-store request failed (names the URI and the service's answer)."""


class PublicationConflictError(ObjectStoreError):
    """Another writer published a copy first: this copy was not published (and was removed)."""


def split_s3_uri(uri: str) -> tuple[str, str]:
    """``s3://bucket/some/prefix`` -> ``("bucket", "some/prefix")`` (no trailing slash)."""
    if not uri.startswith("s3://"):
        raise ValueError(f"not an s3:// URI: {uri!r}")
    bucket, _, key = uri[len("s3://") :].partition("/")
    if not bucket:
        raise ValueError(f"no bucket in {uri!r}")
    return bucket, key.strip("/")


def option_spellings(name: str) -> tuple[str, str]:
    """The two accepted spellings of an ``s3.*`` option, lower-cased: ``s3.access.key`` and
    ``s3.accesskey`` (written ``s3.accessKey``)."""
    return name, "s3." + "".join(name.split(".")[1:])


@dataclass(frozen=True, slots=True)
class S3Settings:
    """How to reach S3 (or an S3 API such as MinIO or moto): picklable, turned into clients
    where they are used. ``None`` fields are left to boto3's own environment and files."""

    endpoint_url: str | None = None
    region: str | None = None
    access_key: str | None = None
    secret_key: str | None = None
    session_token: str | None = None
    profile: str | None = None

    OPTION_NAMES = (
        "s3.endpoint",
        "s3.region",
        "s3.access.key",
        "s3.secret.key",
        "s3.session.token",
        "s3.profile",
    )

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> S3Settings:
        """Settings from ``s3.*`` options (case-insensitive names; ``s3.access.key`` and
        ``s3.accessKey`` alike); absent ones fall back to the AWS environment when a client
        is made."""
        lowered = {k.lower(): v for k, v in options.items()}
        return cls(
            *(
                next((lowered[s] for s in option_spellings(name) if lowered.get(s)), None)
                for name in cls.OPTION_NAMES
            )
        )

    def as_options(self) -> dict[str, str]:
        """The set fields as ``s3.*`` options (what :meth:`from_options` reads)."""
        return {
            name: value
            for name, value in zip(self.OPTION_NAMES, self._values(), strict=True)
            if value is not None
        }

    def _values(self) -> tuple[str | None, ...]:
        return (
            self.endpoint_url,
            self.region,
            self.access_key,
            self.secret_key,
            self.session_token,
            self.profile,
        )

    def resolved(self) -> S3Settings:
        """These settings with what boto3 finds on this machine filled in (credentials from
        the environment, a profile or the AWS files; ``AWS_ENDPOINT_URL``; the region), so
        processes elsewhere (Spark executors, whose environment may differ) reach the same
        account and endpoint. Explicit fields are kept."""
        import boto3

        session = boto3.session.Session(profile_name=self.profile)
        found = session.get_credentials()
        frozen = found.get_frozen_credentials() if found is not None else None
        return S3Settings(
            endpoint_url=self.endpoint_url
            or os.environ.get("AWS_ENDPOINT_URL_S3")
            or os.environ.get("AWS_ENDPOINT_URL"),
            region=self.region or session.region_name,
            access_key=self.access_key or (frozen.access_key if frozen else None),
            secret_key=self.secret_key or (frozen.secret_key if frozen else None),
            session_token=self.session_token or (frozen.token if frozen else None),
            profile=None,
        )

    def client(self) -> Any:
        """A boto3 S3 client (imported here: only object-store work needs boto3)."""
        try:
            import boto3
        except ImportError as exc:  # pragma: no cover - boto3 is in the objectstore extra
            raise ObjectStoreError(
                "writing to object storage needs boto3: pip install 'seglog[objectstore]'"
            ) from exc
        return boto3.session.Session(profile_name=self.profile).client(
            "s3",
            endpoint_url=self.endpoint_url,
            region_name=self.region,
            aws_access_key_id=self.access_key,
            aws_secret_access_key=self.secret_key,
            aws_session_token=self.session_token,
        )


@dataclass(frozen=True, slots=True)
class CopyTarget:
    """Where compacted copies live in a bucket (``s3://bucket/prefix``) and how to reach it:
    picklable, so it travels in Spark tasks."""

    uri: str
    settings: S3Settings

    def __post_init__(self) -> None:
        split_s3_uri(self.uri)  # ValueError naming the URI when it is not s3://bucket/...

    def store_for(self, partition_dir: str) -> RemoteCopyStore:
        """The store of one partition directory name (``<topic>-<partition>``)."""
        return RemoteCopyStore.for_partition(self.settings, self.uri, partition_dir)


def _error_code(exc: BaseException) -> str:
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        return str(response.get("Error", {}).get("Code", ""))
    return ""


@dataclass(frozen=True, slots=True)
class RemotePublication:
    """A published manifest: the publication, the files of its copy, and the ETag it had."""

    publication: Publication
    files: tuple[tuple[str, int], ...]
    etag: str


def encode_manifest(publication: Publication, files: tuple[tuple[str, int], ...]) -> bytes:
    """The manifest bytes: the local ``published.json`` fields plus the copy's files."""
    body = json.loads(publication.encode())
    body["files"] = [[name, size] for name, size in files]
    return (json.dumps(body, sort_keys=True) + "\n").encode()


def decode_manifest(data: bytes, *, uri: str) -> tuple[Publication, tuple[tuple[str, int], ...]]:
    """Parse and check a manifest (typed error naming ``uri`` when damaged)."""
    publication = Publication.decode(data, path=uri)
    try:
        files = tuple((str(name), int(size)) for name, size in json.loads(data)["files"])
        for name, size in files:
            if "/" in name or name.startswith(".") or size < 0:
                raise ValueError(f"bad file entry {name!r} ({size} bytes)")
    except (ValueError, KeyError, TypeError) as exc:
        raise CorruptCheckpointError(f"unreadable manifest file list: {exc}", path=uri) from exc
    return publication, files


@dataclass
class RemoteCopyStore:
    """The ``compaction/`` prefix of one partition in a bucket (module docstring)."""

    settings: S3Settings
    bucket: str
    prefix: str  # ".../<topic>-<partition>/compaction", no trailing slash
    _client: Any = field(default=None, repr=False, compare=False)

    @classmethod
    def for_partition(
        cls, settings: S3Settings, target_uri: str, partition_dir: str
    ) -> RemoteCopyStore:
        """The store of ``partition_dir`` (e.g. ``orders-0``) under ``target_uri``."""
        bucket, root = split_s3_uri(target_uri)
        prefix = "/".join(p for p in (root, partition_dir, COMPACTION_DIR) if p)
        return cls(settings, bucket, prefix)

    @property
    def uri(self) -> str:
        """``s3://bucket/prefix``."""
        return f"s3://{self.bucket}/{self.prefix}"

    @property
    def client(self) -> Any:
        """This process's boto3 client (made on first use)."""
        if self._client is None:
            self._client = self.settings.client()
        return self._client

    def _key(self, *parts: str) -> str:
        return "/".join((self.prefix, *parts))

    def _fail(self, what: str, key: str, exc: BaseException) -> ObjectStoreError:
        return ObjectStoreError(f"{what} s3://{self.bucket}/{key} failed: {exc}")

    # --- the manifest ----------------------------------------------------------------------
    def published(self) -> RemotePublication | None:
        """The published manifest with its ETag, or None when no copy is published."""
        key = self._key(PUBLISHED_FILE)
        try:
            answer = self.client.get_object(Bucket=self.bucket, Key=key)
        except Exception as exc:
            if _error_code(exc) in ("NoSuchKey", "404", "NoSuchBucket"):
                if _error_code(exc) == "NoSuchBucket":
                    raise self._fail("reading", key, exc) from exc
                return None
            raise self._fail("reading", key, exc) from exc
        body = answer["Body"].read(FILE_MAX_BYTES + 1)
        if len(body) > FILE_MAX_BYTES:
            raise CorruptCheckpointError("manifest is too large", path=f"s3://{self.bucket}/{key}")
        publication, files = decode_manifest(body, uri=f"s3://{self.bucket}/{key}")
        return RemotePublication(publication, files, str(answer["ETag"]))

    def publish(
        self,
        publication: Publication,
        files: tuple[tuple[str, int], ...],
        *,
        expected: RemotePublication | None,
    ) -> str:
        """Step 3: PUT the manifest if it is still ``expected`` (None: if there is none);
        returns the new ETag. Raises :class:`PublicationConflictError` when another writer
        published in between."""
        key = self._key(PUBLISHED_FILE)
        condition = {"IfMatch": expected.etag} if expected else {"IfNoneMatch": "*"}
        try:
            answer = self.client.put_object(
                Bucket=self.bucket,
                Key=key,
                Body=encode_manifest(publication, files),
                ContentType="application/json",
                **condition,
            )
        except Exception as exc:
            if _error_code(exc) in ("PreconditionFailed", "412", "ConditionalRequestConflict"):
                started = f"copy {expected.publication.copy}" if expected else "no copy"
                raise PublicationConflictError(
                    f"another writer published a compacted copy at s3://{self.bucket}/{key} "
                    f"after this one started from {started}; {publication.copy} was not "
                    "published"
                ) from exc
            raise self._fail("publishing", key, exc) from exc
        return str(answer["ETag"])

    # --- copies ----------------------------------------------------------------------------
    def upload_copy(self, local_copy_dir: Path) -> tuple[tuple[str, int], ...]:
        """Step 2: upload every file of a finished local copy under the same copy name;
        returns (name, size) of each, in name order."""
        files: list[tuple[str, int]] = []
        for path in sorted(local_copy_dir.iterdir()):
            if not path.is_file():
                continue
            key = self._key(local_copy_dir.name, path.name)
            with fileops.open_read(path) as source:
                try:
                    self.client.upload_fileobj(source, self.bucket, key, Config=_transfer())
                except SeglogError:
                    raise
                except Exception as exc:  # the service, the network or the local file
                    raise self._fail("uploading to", key, exc) from exc
            files.append((path.name, path.stat().st_size))
        return tuple(files)

    def download_copy(self, remote: RemotePublication, partition_dir: Path) -> Path:
        """Fetch a published copy into ``partition_dir/compaction/`` as an ordinary local
        copy (its files, then ``published.json``); returns that ``compaction`` directory.
        A file whose size differs from the manifest's raises (a copy is never read torn)."""
        local = partition_dir / COMPACTION_DIR
        copy_dir = local / remote.publication.copy
        fileops.mkdir(copy_dir, parents=True, exist_ok=True)
        for name, size in remote.files:
            self._download(self._key(remote.publication.copy, name), size, copy_dir / name)
        write_file_atomically(
            local / PUBLISHED_FILE, encode_manifest(remote.publication, remote.files)
        )
        return local

    def _download(self, key: str, size: int, target: Path) -> None:
        """One object into ``target`` by ranged GETs of :data:`TRANSFER_CHUNK_BYTES`; the
        object must be exactly ``size`` bytes (a copy is never read torn)."""
        uri = f"s3://{self.bucket}/{key}"
        fd = fileops.open_fd(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            position = 0
            while position < size:
                last = min(position + TRANSFER_CHUNK_BYTES, size) - 1
                try:
                    answer = self.client.get_object(
                        Bucket=self.bucket, Key=key, Range=f"bytes={position}-{last}"
                    )
                    data = answer["Body"].read()
                    total = int(str(answer.get("ContentRange", "/-1")).rpartition("/")[2])
                except Exception as exc:
                    raise self._fail("downloading", key, exc) from exc
                if total != size or len(data) != last + 1 - position:
                    raise CorruptCheckpointError(
                        f"object is {total} bytes (a range gave {len(data)}), the manifest "
                        f"says {size}",
                        path=uri,
                    )
                fileops.pwrite(fd, target, data, position)
                position += len(data)
            fileops.fsync(fd, target)
        finally:
            os.close(fd)

    def _objects(self, under: str) -> Iterator[dict[str, Any]]:
        """Every object under ``under/`` (paged listing)."""
        paginator = self.client.get_paginator("list_objects_v2")
        try:
            for page in paginator.paginate(Bucket=self.bucket, Prefix=under + "/"):
                yield from page.get("Contents", ())
        except Exception as exc:
            raise self._fail("listing", under, exc) from exc

    def remove_copy(self, name: str) -> None:
        """Delete every object of copy ``name`` (never the manifest)."""
        if not name.startswith(COPY_PREFIX) or "/" in name:
            raise ValueError(f"not a copy name: {name!r}")
        keys = [obj["Key"] for obj in self._objects(self._key(name))]
        for start in range(0, len(keys), 1000):
            batch = [{"Key": key} for key in keys[start : start + 1000]]
            try:
                self.client.delete_objects(Bucket=self.bucket, Delete={"Objects": batch})
            except Exception as exc:
                raise self._fail("deleting under", self._key(name), exc) from exc

    def sweep(
        self, *, grace_ms: int = SWEEP_GRACE_MS_DEFAULT, now_ms: int | None = None
    ) -> list[str]:
        """Step 4: remove copies the manifest does not name whose newest object is older than
        ``grace_ms`` (unpublished leftovers of a crash, superseded copies); returns them."""
        now = int(time.time() * 1000) if now_ms is None else now_ms
        current = self.published()
        keep = current.publication.copy if current else None
        newest: dict[str, int] = {}
        for obj in self._objects(self.prefix):
            relative = obj["Key"][len(self.prefix) + 1 :]
            name, slash, _ = relative.partition("/")
            if slash and name.startswith(COPY_PREFIX) and name != keep:
                stamp = int(obj["LastModified"].timestamp() * 1000)
                newest[name] = max(newest.get(name, 0), stamp)
        removed = [name for name, stamp in sorted(newest.items()) if now - stamp >= grace_ms]
        for name in removed:
            self.remove_copy(name)
        return removed


def _transfer() -> Any:
    """boto3 transfers in parts of :data:`TRANSFER_CHUNK_BYTES`, at most 4 at a time."""
    from boto3.s3.transfer import TransferConfig

    return TransferConfig(
        multipart_threshold=TRANSFER_CHUNK_BYTES,
        multipart_chunksize=TRANSFER_CHUNK_BYTES,
        max_concurrency=4,
    )
