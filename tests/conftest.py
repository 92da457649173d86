"""Suite-wide settings: hypothesis without timing deadlines (CI machines are shared and noisy);
the real control plane's fixtures (tests/controlplane)."""

from __future__ import annotations

from hypothesis import settings

pytest_plugins = ["controlplane.fixtures"]

settings.register_profile("allot", deadline=None, print_blob=True)
settings.load_profile("allot")
