"""allot.plan (see DESIGN.md)."""
