"""seglog.spark layer (see DESIGN.md)."""
