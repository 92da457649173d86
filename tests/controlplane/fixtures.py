"""pytest fixtures over `ControlPlane`: skip where no binaries are found, one plane per module.

`control_plane` is module-scoped (a start costs about 3 s); tests in one module share it and
keep out of each other's way with their own namespaces and object names. A test that breaks
the plane (restarts, compaction) asks for `fresh_control_plane`, its own.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from controlplane.plane import ControlPlane, binaries_folder, skip_reason


def _plane(tmp: Path) -> Iterator[ControlPlane]:
    if binaries_folder() is None:
        pytest.skip(skip_reason())
    plane = ControlPlane(tmp)
    plane.start()
    try:
        yield plane
    finally:
        plane.stop()


@pytest.fixture(scope="module")
def control_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    yield from _plane(tmp_path_factory.mktemp("control-plane"))


@pytest.fixture
def fresh_control_plane(tmp_path: Path) -> Iterator[ControlPlane]:
    yield from _plane(tmp_path / "control-plane")
