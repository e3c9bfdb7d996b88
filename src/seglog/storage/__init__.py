"""seglog.storage layer (see docs/architecture.md)."""
