"""Run one fuzz case through the real `allot` entry point and check the harness's invariant.

A case is a command line plus the files it reads, written into a fresh
folder that the command runs in. The invariant, for every input:

* the exit status is 0 (done), 1 (bad input), 2 (bad usage) or 3 (answered
  "no"), never a signal, never 4 (allot's own "internal error");
* a non-zero status comes with a message on stderr, and nothing prints a
  Python traceback;
* the process never needs more address space than the ceiling
  (`MEMORY_CEILING`, enforced with RLIMIT_AS in the child) and finishes
  within the case's time limit;
* a command that fails leaves the folder exactly as it found it, and one
  that succeeds leaves no temporary file behind: never a partial file.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from fuzzing import MEMORY_CEILING

ALLOWED_CODES = (0, 1, 2, 3)
TRACEBACK = "Traceback (most recent call last)"
DEFAULT_TIMEOUT = 120.0
WORKER = Path(__file__).with_name("worker.py")


@dataclass
class Case:
    """A command line (without `allot`) and the files it reads, by name relative to its folder."""

    argv: list[str]
    files: dict[str, bytes] = field(default_factory=dict)
    stdin: bytes = b""
    timeout: float = DEFAULT_TIMEOUT

    def describe(self) -> str:
        shown = {name: data[:2000].decode("utf-8", "replace") for name, data in self.files.items()}
        return f"allot {' '.join(self.argv)}\nfiles: {json.dumps(shown, indent=1)[:6000]}"


@dataclass
class Outcome:
    code: int | None
    signal: int | None
    timed_out: bool
    max_rss_kib: int
    stdout: str
    stderr: str
    changed: list[str]
    leftovers: list[str]

    def problems(self) -> list[str]:
        """Every way this run broke the invariant (empty when it held)."""
        found: list[str] = []
        if self.timed_out:
            found.append("did not finish within its time limit")
        elif self.signal is not None:
            found.append(f"killed by signal {self.signal}")
        elif self.code not in ALLOWED_CODES:
            found.append(f"exit status {self.code}")
        if TRACEBACK in self.stderr or TRACEBACK in self.stdout:
            found.append("printed a traceback")
        # "No" (3) may be the command's normal output (allocate's diagnosis); anything else goes to stderr.
        message = self.stderr.strip() or (self.code == 3 and self.stdout.strip())
        if self.code not in (0, None) and not message:
            found.append("failed without a message on stderr")
        if self.code not in (0, None) and self.changed:
            found.append(f"failed but wrote {self.changed}")
        if self.leftovers:
            found.append(f"left temporary files {self.leftovers}")
        return found


def _snapshot(folder: Path) -> dict[str, str]:
    return {
        str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def _temporary(name: str) -> bool:
    base = Path(name).name
    return base.endswith((".tmp", ".part")) or base.startswith((".tmp", "tmp"))


class Worker:
    """One worker process (worker.py) for a whole session; `run` forks a child per case."""

    def __init__(self, *, ceiling: int = MEMORY_CEILING) -> None:
        self.ceiling = ceiling
        self.scratch = Path(tempfile.mkdtemp(prefix="allot-fuzz-"))
        # No API server: `allot run` and `allot agent run` must fail at once, never reach a cluster.
        env = {
            **os.environ,
            "PYTHONUNBUFFERED": "1",
            "COLUMNS": "120",
            "KUBECONFIG": str(self.scratch / "no-such-kubeconfig"),
        }
        for name in ("ALLOT_TRACEBACK", "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"):
            env.pop(name, None)
        self.process = subprocess.Popen(
            [sys.executable, str(WORKER)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        self.count = 0

    def run(self, case: Case) -> Outcome:
        self.count += 1
        root = self.scratch / f"case-{self.count}"
        folder = root / "work"
        folder.mkdir(parents=True)
        for name, data in case.files.items():
            path = folder / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        streams = {name: root / name for name in ("stdin", "stdout", "stderr")}
        streams["stdin"].write_bytes(case.stdin)
        streams["stdout"].touch()
        streams["stderr"].touch()
        before = _snapshot(folder)
        request = {
            "argv": case.argv,
            "cwd": str(folder),
            "ceiling": self.ceiling,
            "timeout": case.timeout,
            **{name: str(path) for name, path in streams.items()},
        }
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        answer = json.loads(self.process.stdout.readline())
        after = _snapshot(folder)
        changed = sorted(name for name, digest in after.items() if before.get(name) != digest)
        outcome = Outcome(
            code=answer["code"],
            signal=answer["signal"],
            timed_out=answer["timed_out"],
            max_rss_kib=answer["max_rss_kib"],
            stdout=streams["stdout"].read_text(errors="replace"),
            stderr=streams["stderr"].read_text(errors="replace"),
            changed=changed,
            leftovers=[name for name in changed if _temporary(name)],
        )
        _remove(root)
        return outcome

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.wait(timeout=30)
        if self.process.stdout is not None:
            self.process.stdout.close()
        _remove(self.scratch)


def _remove(folder: Path) -> None:
    for path in sorted(folder.rglob("*"), reverse=True):
        if path.is_dir() and not path.is_symlink():
            path.rmdir()
        else:
            path.unlink()
    folder.rmdir()


def check(worker: Worker, case: Case) -> Outcome:
    """Run `case`; AssertionError with the case and the evidence when the invariant does not hold."""
    outcome = worker.run(case)
    problems = outcome.problems()
    assert not problems, (
        f"{'; '.join(problems)}\n{case.describe()}\n"
        f"--- exit {outcome.code}, stderr (last 3000 characters):\n{outcome.stderr[-3000:]}"
    )
    return outcome
