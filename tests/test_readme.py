"""The README's two commands: CI runs exactly the test command, and the main job is `allot simulate`."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _shell_blocks(text: str) -> list[str]:
    return [block.strip() for block in re.findall(r"```sh\n(.*?)```", text, flags=re.S)]


def test_ci_runs_the_readme_test_command_verbatim() -> None:
    blocks = _shell_blocks((ROOT / "README.md").read_text())
    ci_lines = (ROOT / ".ci" / "run").read_text().splitlines()
    assert len(blocks) >= 2
    assert blocks[1] in ci_lines


def test_the_first_command_installs_and_runs_the_simulator() -> None:
    first = _shell_blocks((ROOT / "README.md").read_text())[0]
    assert "pip install" in first and first.endswith("allot simulate")
