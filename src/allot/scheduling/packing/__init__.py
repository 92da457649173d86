"""Keeping whole nodes whole: GPU occupancy per node, consolidation moves and backfill reservations."""
