"""Hooks around every file operation of ``seglog.storage``, for crash and fault injection.

:mod:`seglog.storage.fileops` (the only module of ``seglog.storage`` that touches files) calls
``reached(operation, path)`` right *before* each operation (``open``, ``create``, ``write``,
``truncate``, ``fsync``, ``fsync-dir``, ``rename``, ``unlink``, ``mkdir``, ``rmtree``,
``utime``) and ``completed(operation, path, source)`` right *after* it succeeded (``source``:
a rename's old name, else None). In production no hook is installed and each costs one global
read. A test installs hooks (:func:`set_hook`, :func:`set_after_hook`, usually through
:mod:`seglog.testing.crash`) that count the operations and kill the process (SIGKILL) or
raise before or after the n-th one, or make it fail as a full disk would, so recovery can be
checked from every point of a procedure (the cleaner's round, the swap protocol, checkpoint
writes, retention's renames).
"""

from __future__ import annotations

import os
from collections.abc import Callable

FaultHook = Callable[[str, str], None]
AfterHook = Callable[[str, str, "str | None"], None]

_hook: FaultHook | None = None
_after_hook: AfterHook | None = None


def set_hook(hook: FaultHook | None) -> FaultHook | None:
    """Install the before-operation ``hook`` (None removes it); returns the previous one."""
    global _hook
    previous, _hook = _hook, hook
    return previous


def set_after_hook(hook: AfterHook | None) -> AfterHook | None:
    """Install the after-operation ``hook`` (None removes it); returns the previous one."""
    global _after_hook
    previous, _after_hook = _after_hook, hook
    return previous


def reached(operation: str, path: str | os.PathLike[str]) -> None:
    """Tell the installed hook (if any) that ``operation`` on ``path`` is about to happen."""
    hook = _hook
    if hook is not None:
        hook(operation, os.fspath(path))


def completed(
    operation: str, path: str | os.PathLike[str], source: str | os.PathLike[str] | None = None
) -> None:
    """Tell the installed after-hook (if any) that ``operation`` on ``path`` succeeded."""
    hook = _after_hook
    if hook is not None:
        hook(operation, os.fspath(path), None if source is None else os.fspath(source))
