"""allot.cli (see DESIGN.md)."""
