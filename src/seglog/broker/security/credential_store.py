"""The SCRAM credential file: salted credentials at the root of the first data directory.

**Format.** ``scram-credentials.json`` (UTF-8 JSON, a plain file a Kafka broker ignores)::

    {"format": "seglog-scram-credentials", "version": 1,
     "users": {"alice": {"SCRAM-SHA-256": "salt=..,stored_key=..,server_key=..,iterations=8192"}}}

Each credential is Kafka's text form (:class:`ScramCredential`): a salt, the stored key, the
server key and the iteration count; never a password. The file is created with mode 0600.

**Writes** (``seglog scram-credentials``) are crash-safe and serialized:

1. Lock the directory (``flock`` on its descriptor): two writers never interleave their
   read-modify-write. Crash: the lock dies with the process; nothing changed.
2. Read the current file, apply the change, write ``scram-credentials.json.tmp`` and fsync it.
   Crash: the old file is whole; the next write truncates the stray ``.tmp``.
3. Rename the ``.tmp`` over the file, fsync the directory. Crash before the rename: as step 2;
   after it: the new file is whole and durable.

Readers see the whole old file or the whole new one, never a mix.

**Reads by a running server.** :meth:`CredentialStore.lookup` stats the file on every lookup
(once per authentication, from any thread: a lock guards the reload) and reloads it when its
inode, size or modification time changed (or was modified in the last two seconds, when a
second write may hide behind the first one's stat), so a credential added or deleted while ``seglog
serve`` runs counts from the next login. A file that no longer parses keeps the last good
credentials (logged as an error), so a damaged file never opens the door to anyone.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from seglog.broker.security.scram import SCRAM_MECHANISMS, ScramCredential
from seglog.errors import InvalidConfigError, SeglogError
from seglog.storage.atomic import write_file_atomically
from seglog.storage.files import read_file_bytes

LOG = logging.getLogger("seglog.serve")
FILE_NAME = "scram-credentials.json"
FORMAT = "seglog-scram-credentials"
VERSION = 1
MAX_FILE_BYTES = 64 * 1024 * 1024
# A file modified this recently is read again even when its stat looks unchanged: two writes
# within one file-system timestamp tick can leave the same size, time and (recycled) inode.
RACY_NS = 2_000_000_000

Credentials = dict[str, dict[str, ScramCredential]]  # user -> mechanism -> credential


def _parse(data: bytes, where: str) -> Credentials:
    try:
        document = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise InvalidConfigError(f"{where}: not a JSON document: {error}") from None
    if (
        not isinstance(document, dict)
        or document.get("format") != FORMAT
        or document.get("version") != VERSION
        or not isinstance(document.get("users"), dict)
    ):
        raise InvalidConfigError(f"{where}: not a {FORMAT} version {VERSION} document")
    credentials: Credentials = {}
    for user, entries in document["users"].items():
        if not isinstance(entries, dict):
            raise InvalidConfigError(f"{where}: user {user!r}: expected an object")
        for mechanism, text in entries.items():
            if mechanism not in SCRAM_MECHANISMS or not isinstance(text, str):
                raise InvalidConfigError(f"{where}: user {user!r}: bad entry {mechanism!r}")
            at = f"{where}: user {user!r} {mechanism}"
            credentials.setdefault(user, {})[mechanism] = ScramCredential.from_text(text, at)
    return credentials


def _render(credentials: Credentials) -> bytes:
    users = {
        user: {mechanism: credential.to_text() for mechanism, credential in sorted(entries.items())}
        for user, entries in sorted(credentials.items())
        if entries
    }
    document = {"format": FORMAT, "version": VERSION, "users": users}
    return (json.dumps(document, indent=1, ensure_ascii=False) + "\n").encode("utf-8")


class CredentialStore:
    """The credential file of one data directory (see the module docstring)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.path = directory / FILE_NAME
        self._seen: tuple[int, int, int] | None = None
        self._credentials: Credentials = {}
        self._data = b""
        self._lock = threading.Lock()

    def load(self) -> Credentials:
        """Every credential in the file (none when it does not exist).

        Raises:
            InvalidConfigError: the file does not parse (naming it and what is wrong).
        """
        if not self.path.exists():
            return {}
        return _parse(read_file_bytes(self.path, max_bytes=MAX_FILE_BYTES), str(self.path))

    def lookup(self, user: str, mechanism: str) -> ScramCredential | None:
        """``user``'s credential for ``mechanism``, from the file as it is now."""
        self._refresh()
        return self._credentials.get(user, {}).get(mechanism)  # replaced whole, never mutated

    def credentials_of(self, user: str) -> dict[str, ScramCredential]:
        self._refresh()
        return dict(self._credentials.get(user, {}))

    def _refresh(self) -> None:
        with self._lock:  # lookups run in the server's worker threads
            self._refresh_locked()

    def _refresh_locked(self) -> None:
        try:
            st = os.stat(self.path)
            seen: tuple[int, int, int] | None = (st.st_ino, st.st_size, st.st_mtime_ns)
        except FileNotFoundError:
            seen = None
        if seen is None:
            self._credentials, self._seen, self._data = {}, None, b""
            return
        racy = time.time_ns() - st.st_mtime_ns < RACY_NS
        if seen == self._seen and not racy:
            return
        try:
            data = read_file_bytes(self.path, max_bytes=MAX_FILE_BYTES)
            if data != self._data or self._seen is None:
                self._credentials = _parse(data, str(self.path))
                self._data = data
        except SeglogError as error:
            LOG.error("keeping the previous SCRAM credentials: %s", error)
        self._seen = seen

    @contextmanager
    def _locked(self) -> Iterator[None]:
        fd = os.open(self.directory, os.O_RDONLY | os.O_DIRECTORY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # releases the lock

    def alter(self, change: Callable[[Credentials], None]) -> Credentials:
        """Apply ``change`` to the credentials under the lock and write them crash-safely;
        returns the credentials written."""
        with self._locked():
            credentials = self.load()
            change(credentials)
            self._write(_render(credentials))
            return credentials

    def _write(self, data: bytes) -> None:
        write_file_atomically(self.path, data, mode=0o600)
