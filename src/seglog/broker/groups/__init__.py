"""Classic consumer groups on one node: the ``__consumer_offsets`` store
(:mod:`.offsets_store`) and the offset expiry rule (:mod:`.offset_expiry`)."""
