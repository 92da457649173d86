"""allot.live (see DESIGN.md)."""
