"""seglog.storage layer (see DESIGN.md)."""
