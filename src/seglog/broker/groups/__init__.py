"""Classic consumer groups on one node.

The coordinator (a pure state machine: :mod:`.coordinator`), the ``__consumer_offsets`` store
(:mod:`.offsets_store`) and the offset expiry rule (:mod:`.offset_expiry`).
"""
