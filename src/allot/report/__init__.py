"""allot.report (see DESIGN.md)."""
