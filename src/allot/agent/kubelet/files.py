"""Writing the plugin's files whole and durably: a crash leaves the old file or the new one.

The checkpoint and the CDI specs are read by others (the plugin after a restart, the container
runtime at any moment), so a reader must never see half a file: the content goes to a temporary
file in the same folder, is flushed to disk, and replaces the target in one rename; the folder
is synced so the rename survives a power loss too.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_durably(path: Path, content: bytes, *, mode: int = 0o644) -> None:
    """Replace `path` with `content` in one rename, after both reached the disk."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    staged = Path(name)
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(content)
            file.flush()
            os.fsync(file.fileno())
        staged.chmod(mode)
        staged.replace(path)
    except BaseException:
        staged.unlink(missing_ok=True)
        raise
    sync_folder(path.parent)


def sync_folder(folder: Path) -> None:
    """fsync a folder, so that a rename or unlink in it is on disk."""
    descriptor = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def remove_durably(path: Path) -> bool:
    """Remove `path` if it exists; whether it did."""
    try:
        path.unlink()
    except FileNotFoundError:
        return False
    sync_folder(path.parent)
    return True
