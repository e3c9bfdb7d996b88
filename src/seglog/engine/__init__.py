"""seglog.engine layer (see DESIGN.md)."""
