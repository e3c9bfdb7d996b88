"""seglog.core layer (see docs/architecture.md)."""
