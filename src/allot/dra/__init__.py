"""allot.dra (see DESIGN.md)."""
