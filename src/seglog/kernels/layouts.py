"""The constants the compiled kernels share with their callers, in a module without numba.

:mod:`seglog.kernels.compact` (the cleaner's batch rewriter) and
:mod:`seglog.kernels.version_map` (the version map's table) import numba, which costs a
quarter of a second; their callers and plain-Python twins take the numbers from here, so a
command that never runs a kernel (``seglog consume``, ``seglog topics list``) never imports
numba. The kernel modules re-export them under the same names.

Compaction actions per batch: drop it, copy it unchanged, rebuild it from its kept records, or
keep it as an empty batch (its last offset and producer state must survive).
Version map table: one int64 row per slot, columns ``COL_*`` (the SipHash halves, the stored
offset + 1 with 0 for an empty slot, the winner's version); the state vector's ``STATE_*``.
"""

from __future__ import annotations

ACTION_DROP = 0
ACTION_COPY = 1
ACTION_REBUILD = 2
ACTION_EMPTY = 3

BATCH_HEADER_BYTES = 61
DELETE_HORIZON_FLAG = 0x40
COMPRESSION_MASK = 0x07

MISSING_VERSION = -(1 << 63)
COL_H0, COL_H1, COL_STORED, COL_VERSION = 0, 1, 2, 3
VERSION_SLOT_WORDS = 4
STATE_SIZE, STATE_LATEST, STATE_LOOKUPS, STATE_PROBES = 0, 1, 2, 3
