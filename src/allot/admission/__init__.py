"""allot.admission (see DESIGN.md)."""
