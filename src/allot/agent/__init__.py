"""allot.agent (see DESIGN.md)."""
