"""Named points before file operations of seglog's crash-safe procedures, for crash injection.

``reached(operation, path)`` is called right *before* an operation that changes files
(``open`` creating a file, ``write``, ``fsync``, ``fsync-dir``, ``rename``, ``unlink``,
``utime``). In production no hook is installed and it costs one global read. A test installs
a hook (:func:`set_hook`, usually through :mod:`seglog.testing.crash`) that counts the
operations and kills the process (SIGKILL) or raises at the n-th one, so recovery can be
checked from every point of a procedure (the cleaner's round, the swap protocol, checkpoint
writes, retention's renames).
"""

from __future__ import annotations

import os
from collections.abc import Callable

FaultHook = Callable[[str, str], None]

_hook: FaultHook | None = None


def set_hook(hook: FaultHook | None) -> FaultHook | None:
    """Install ``hook`` (None removes it); returns the previous one."""
    global _hook
    previous, _hook = _hook, hook
    return previous


def reached(operation: str, path: str | os.PathLike[str]) -> None:
    """Tell the installed hook (if any) that ``operation`` on ``path`` is about to happen."""
    hook = _hook
    if hook is not None:
        hook(operation, os.fspath(path))
