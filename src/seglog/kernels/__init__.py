"""seglog.kernels layer (see DESIGN.md)."""
