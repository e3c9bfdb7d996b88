"""seglog.core layer (see DESIGN.md)."""
