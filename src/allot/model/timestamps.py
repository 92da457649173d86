"""Kubernetes timestamps (RFC 3339, `metav1.Time`) as seconds since the epoch."""

from __future__ import annotations

from datetime import datetime


def parse_timestamp(text: str | None) -> float | None:
    """RFC 3339 (`2026-01-02T03:04:05Z`) as seconds since the epoch; None if absent or malformed."""
    if not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None
