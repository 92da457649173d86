"""allot.scheduling (see DESIGN.md)."""
