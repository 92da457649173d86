"""allot.engine (see DESIGN.md)."""
