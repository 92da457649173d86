"""allot.cel (see DESIGN.md)."""
