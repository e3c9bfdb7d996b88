"""A private temporary file, for a secret a library reads only from a path.

Python's :mod:`ssl` loads a private key only from a file (``load_cert_chain``), so a key given
inline (``ssl.keystore.key``, by the server's settings or the CLI's ``--command-config``) must
pass through one. :func:`private_file` writes it into a new directory only this user may enter
(``tempfile.mkdtemp``: mode 0700) as a file of mode 0600, yields the file's path, and removes
the directory with the file when the block ends, whatever happens in it.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator
from pathlib import Path

from seglog.storage import fileops


@contextlib.contextmanager
def private_file(text: str, name: str) -> Iterator[str]:
    """``text`` in a private file named ``name``; its path, valid inside the block only."""
    with tempfile.TemporaryDirectory(prefix="seglog-private-") as directory:
        path = Path(directory) / name
        fileops.write_new_file(path, text.encode(), 0o600)
        yield str(path)
