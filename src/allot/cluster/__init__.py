"""allot.cluster (see DESIGN.md)."""
