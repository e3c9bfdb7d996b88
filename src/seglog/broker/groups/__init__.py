"""Consumer groups: the classic group coordinator and the ``__consumer_offsets`` store."""
