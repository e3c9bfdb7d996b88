<<<<<<< HEAD
"""Consumer groups: the classic group coordinator and the ``__consumer_offsets`` store."""
=======
"""Classic consumer groups on one node: the ``__consumer_offsets`` store
(:mod:`.offsets_store`) and the offset expiry rule (:mod:`.offset_expiry`)."""
>>>>>>> groupstore
