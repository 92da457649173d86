"""Suite-wide settings: hypothesis without timing deadlines (CI machines are shared and noisy)."""

from __future__ import annotations

from hypothesis import settings

settings.register_profile("allot", deadline=None, print_blob=True)
settings.load_profile("allot")
