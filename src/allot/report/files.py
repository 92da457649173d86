"""Writing output files whole or not at all.

Every file allot writes goes through `write_atomically`: the content goes to
a temporary file next to the target, which then replaces the target in one
rename. A run that fails part way (a full disk, a killed process, an error
while rendering) leaves the old file or no file, never a half-written one,
and no temporary file behind.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_atomically(path: Path, content: bytes) -> None:
    """Write `content` to `path` whole: through a temporary file next to it, renamed into place."""
    handle, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    temporary = Path(name)
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(content)
        temporary.replace(path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
