"""seglog.cli layer (see DESIGN.md)."""
