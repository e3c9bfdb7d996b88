"""Crash injection into a SCRAM credential change (``scram-credentials.json``: read, tmp file,
fsync, rename, directory fsync): crashed right before, or right after, each file operation,
the file must hold the old credentials or the new ones, whole, and the next change must work
(a stray ``.tmp`` is overwritten)."""

from __future__ import annotations

from pathlib import Path

import pytest

from seglog.broker.security.credential_store import FILE_NAME, Credentials, CredentialStore
from seglog.broker.security.scram import make_credential, password_matches
from seglog.testing.crash import SimulatedCrash, count_operations, crash_at

ALICE = make_credential("SCRAM-SHA-256", "alice-pw")
BOB = make_credential("SCRAM-SHA-512", "bob-pw")


def _add_bob(credentials: Credentials) -> None:
    credentials["bob"] = {"SCRAM-SHA-512": BOB}


def _prepared(directory: Path) -> CredentialStore:
    directory.mkdir()
    store = CredentialStore(directory)
    store.alter(lambda c: c.update({"alice": {"SCRAM-SHA-256": ALICE}}))
    return store


def test_a_change_goes_through_the_atomic_steps(tmp_path: Path) -> None:
    store = _prepared(tmp_path / "data")
    with count_operations() as ops:
        store.alter(_add_bob)
    names = [op for op, _ in ops.operations]
    assert names == ["open", "create", "write", "fsync", "rename", "fsync-dir"], ops.operations


@pytest.mark.crash
@pytest.mark.parametrize("after", [False, True], ids=["before", "after"])
def test_crash_at_every_operation_of_a_change(tmp_path: Path, after: bool) -> None:
    with count_operations() as ops:
        _prepared(tmp_path / "reference").alter(_add_bob)
    count = ops.count - 5  # the operations of the preparing write (no read: no file yet)
    assert count == 6
    for n in range(1, count + 1):
        directory = tmp_path / f"trial-{n}"
        store = _prepared(directory)
        with crash_at(n, after=after), pytest.raises(SimulatedCrash):
            store.alter(_add_bob)
        users = CredentialStore(directory).load()
        new = n > 5 or (after and n == 5)  # the rename happened: the new file, whole
        assert sorted(users) == (["alice", "bob"] if new else ["alice"]), (n, after)
        assert password_matches("SCRAM-SHA-256", users["alice"]["SCRAM-SHA-256"], "alice-pw")
        store.alter(_add_bob)  # the next change works, over any stray .tmp
        assert sorted(CredentialStore(directory).load()) == ["alice", "bob"]
        assert sorted(p.name for p in directory.iterdir() if p.is_file()) == [FILE_NAME]
