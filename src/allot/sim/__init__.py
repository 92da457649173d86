"""allot.sim (see DESIGN.md)."""
