"""Why a log cannot be cleaned, or a round stopped: the cleaner's error types.

:class:`UncleanableLogError` (and its kinds) marks the partition uncleanable with the error's
text as the reason; :class:`CleaningAbortedError` stops a round without swapping anything in.
"""

from __future__ import annotations

from seglog.errors import SeglogError


class CleaningAbortedError(SeglogError):
    """The round was aborted (pause, deletion, shutdown); nothing was swapped in."""


class UncleanableLogError(SeglogError):
    """The log cannot be cleaned; the partition is marked uncleanable with this reason."""


class LegacyFormatError(UncleanableLogError):
    """The log holds legacy (v0/v1) entries, which this cleaner does not rewrite."""
