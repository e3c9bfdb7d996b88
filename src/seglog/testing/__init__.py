"""Shipped test helpers: hypothesis strategies, log builders and (later) fault injection."""
