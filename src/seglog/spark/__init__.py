"""seglog.spark layer (see docs/architecture.md)."""
