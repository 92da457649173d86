"""One MPS control daemon per fractional GPU, started with its first claim, stopped after its last.

A fractional GPU's claims run as MPS clients: the daemon's server runs their kernels within the
compute and memory limits each client's environment names (the CDI spec sets them). The
manager talks to `nvidia-cuda-mps-control` only, through a `ProcessRunner`, as an operator would:

* start: `nvidia-cuda-mps-control -d` with `CUDA_VISIBLE_DEVICES=<GPU UUID>` (the daemon, and
  the servers it spawns, see that GPU only), `CUDA_MPS_PIPE_DIRECTORY=<mps-dir>/<uuid>/pipe`
  and `CUDA_MPS_LOG_DIRECTORY=<mps-dir>/<uuid>/log`;
* alive?: `get_server_list` written to the control command (it fails when no daemon listens
  on the pipe folder);
* stop: `quit` written to it.

MPS servers and clients also meet in /dev/shm. With `private_shm` (the default) the daemon
starts in a mount namespace of its own where `<mps-dir>/<uuid>/shm` is bind-mounted over
/dev/shm (`unshare --mount` and `mount --bind`: the agent needs CAP_SYS_ADMIN), and the CDI
spec mounts the same folder at the clients' /dev/shm: pods on one GPU (one trust domain)
share it, pods on another GPU never see it. Without it the daemon uses the agent's /dev/shm,
which must then be a host folder shared with every client (`--mps-shm=shared`).

Tests substitute the control command (a stand-in script on PATH that records its calls and
keeps a real daemon process), never this logic.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from allot.agent.kubelet.cdi import MpsFolders

log = logging.getLogger(__name__)
CONTROL = "nvidia-cuda-mps-control"
# Run the control daemon with `shm` over /dev/shm, in a mount namespace of its own.
_PRIVATE_SHM = 'mount --bind "$0" /dev/shm && exec "$@"'


@dataclass(frozen=True, slots=True)
class Completed:
    returncode: int
    output: str


class ProcessRunner(Protocol):
    def run(self, argv: Sequence[str], *, env: Mapping[str, str], stdin: str, timeout: float) -> Completed:
        """Run `argv` to its end with `env` added to the agent's environment."""
        ...


class SubprocessRunner:
    def run(self, argv: Sequence[str], *, env: Mapping[str, str], stdin: str, timeout: float) -> Completed:
        try:
            done = subprocess.run(
                list(argv),
                input=stdin,
                env={**os.environ, **env},
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,
            )
        except FileNotFoundError:
            return Completed(127, f"{argv[0]}: not found")
        except subprocess.TimeoutExpired:
            return Completed(124, f"{argv[0]}: no answer within {timeout:.0f} s")
        return Completed(done.returncode, (done.stdout + done.stderr).strip())


class MpsError(RuntimeError):
    """A daemon that did not start; the message says which GPU and what the command said."""


@dataclass
class MpsManager:
    root: Path  # --mps-dir: one folder per GPU UUID below it
    runner: ProcessRunner
    control: str = CONTROL
    private_shm: bool = True
    timeout: float = 30.0

    def folders(self, uuid: str) -> MpsFolders:
        base = self.root / uuid
        return MpsFolders(pipe=base / "pipe", log=base / "log", shm=base / "shm")

    def _env(self, uuid: str) -> dict[str, str]:
        folders = self.folders(uuid)
        return {
            "CUDA_VISIBLE_DEVICES": uuid,
            "CUDA_MPS_PIPE_DIRECTORY": str(folders.pipe),
            "CUDA_MPS_LOG_DIRECTORY": str(folders.log),
        }

    def _ask(self, uuid: str, command: str) -> Completed:
        return self.runner.run(
            [self.control], env=self._env(uuid), stdin=command + "\n", timeout=self.timeout
        )

    def running(self, uuid: str) -> bool:
        return self.folders(uuid).pipe.is_dir() and self._ask(uuid, "get_server_list").returncode == 0

    def ensure(self, uuid: str) -> tuple[MpsFolders, bool]:
        """The daemon of GPU `uuid`, started if it is not running (then True); MpsError if it
        does not start."""
        folders = self.folders(uuid)
        if self.running(uuid):
            return folders, False
        for folder in (folders.pipe, folders.log, folders.shm):
            folder.mkdir(parents=True, exist_ok=True)
        argv = [self.control, "-d"]
        if self.private_shm:
            argv = ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c", _PRIVATE_SHM,
                    str(folders.shm), *argv]  # fmt: skip
        started = self.runner.run(argv, env=self._env(uuid), stdin="", timeout=self.timeout)
        if started.returncode != 0 or not self.running(uuid):
            raise MpsError(
                f"GPU {uuid}: the MPS control daemon did not start "
                f"(exit {started.returncode}: {started.output or 'no output'}); see {folders.log}/control.log"
            )
        log.info("GPU %s: MPS control daemon started (pipes in %s)", uuid, folders.pipe)
        return folders, True

    def stop(self, uuid: str) -> None:
        """Ask GPU `uuid`'s daemon to quit and remove its pipe and shared-memory folders (the
        log stays for whoever debugs); a daemon that is not running is not an error."""
        folders = self.folders(uuid)
        if folders.pipe.is_dir():
            done = self._ask(uuid, "quit")
            if done.returncode != 0 and self.running(uuid):
                raise MpsError(
                    f"GPU {uuid}: the MPS control daemon did not quit: {done.output or 'no output'}"
                )
        for folder in (folders.pipe, folders.shm):
            shutil.rmtree(folder, ignore_errors=True)
        log.info("GPU %s: MPS control daemon stopped", uuid)

    def present(self) -> list[str]:
        """GPUs with a daemon folder below the root (running or left over)."""
        if not self.root.is_dir():
            return []
        return sorted(p.name for p in self.root.iterdir() if (p / "pipe").is_dir())
