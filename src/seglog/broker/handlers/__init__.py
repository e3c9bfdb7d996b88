"""Request handlers of ``seglog serve``, one module per API family (see ``all_handlers``)."""
