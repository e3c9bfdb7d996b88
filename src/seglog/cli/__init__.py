"""seglog.cli layer (see docs/architecture.md)."""
