"""The CDI spec of a prepared claim: what the container runtime adds to the claim's containers.

One spec file per (driver, claim) in the CDI folder (`--cdi-dir`, /var/run/cdi), kind
`allot.dev/gpu`, one CDI device per allocated GPU named `<claim-uid>-<device>`, so the kubelet
hands the runtime `allot.dev/gpu=<claim-uid>-<device>`:

* spec-wide edits (applied once when any of the claim's devices is used): the driver's control
  nodes `/dev/nvidiactl`, `/dev/nvidia-uvm`, `/dev/nvidia-uvm-tools`, and the claim's GPUs by
  UUID in `NVIDIA_VISIBLE_DEVICES` and `CUDA_VISIBLE_DEVICES` (a MIG device by its MIG UUID),
  in allocation order, so CUDA's device 0 is the claim's first GPU;
* per device: its nodes (`/dev/nvidia<minor>`; a MIG device also its GPU and compute
  instance's `/dev/nvidia-caps/nvidia-cap<N>`); for a fractional GPU the MPS client settings:
  `CUDA_MPS_PIPE_DIRECTORY` (the GPU's daemon's pipe folder, mounted at /tmp/nvidia-mps, MPS's
  default, so a client that drops the variable still reaches the daemon),
  `CUDA_MPS_ACTIVE_THREAD_PERCENTAGE` (the compute share), `CUDA_MPS_PINNED_DEVICE_MEM_LIMIT`
  (the memory share, `0=<MiB>M`: the fractional GPU is the claim's only GPU, so device 0), the
  daemon's log folder read-only, and its shared-memory folder at /dev/shm (MPS server and
  clients talk through /dev/shm as well as through the pipes).

cdiVersion 0.5.0: the oldest that has everything used here (mount types came in 0.4.0), which
containerd 1.7+/2.x and CRI-O accept. Several results for the same device in one claim (two
shares of one fractional GPU) are one CDI device whose share is their sum. NICs and CPUs get
no spec: the claim prepares with no CDI device (docs/kubelet-plugin.md).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from allot.agent.kubelet.files import remove_durably, write_durably
from allot.agent.kubelet.targets import MIB, Target

CDI_VERSION = "0.5.0"
CDI_KIND = "allot.dev/gpu"
SPEC_PREFIX = "allot.dev-gpu_"
CONTROL_NODES = ("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools")
MPS_PIPE = "/tmp/nvidia-mps"
MPS_LOG = "/var/log/nvidia-mps"
SHM = "/dev/shm"
GPU_MODES = ("whole", "time-sliced", "shared", "mig")


@dataclass(frozen=True, slots=True)
class MpsFolders:
    """Host folders of one GPU's MPS control daemon."""

    pipe: Path
    log: Path
    shm: Path


@dataclass(frozen=True, slots=True)
class Exposed:
    """One CDI device of a claim: the targets (results) it stands for, merged."""

    name: str
    targets: tuple[Target, ...]

    @property
    def first(self) -> Target:
        return self.targets[0]

    @property
    def cores(self) -> int:
        return min(100, sum(t.cores for t in self.targets))

    @property
    def memory_bytes(self) -> int:
        return sum(t.memory_bytes for t in self.targets)


def device_name(claim_uid: str, device: str) -> str:
    return f"{claim_uid}-{device}"


def qualified(name: str) -> str:
    return f"{CDI_KIND}={name}"


def spec_path(cdi_dir: Path, driver: str, claim_uid: str) -> Path:
    return cdi_dir / f"{SPEC_PREFIX}{driver}-{claim_uid}.json"


def exposed_devices(claim_uid: str, targets: Sequence[Target]) -> list[Exposed]:
    """The claim's GPUs as CDI devices, in allocation order; results for one device merged."""
    groups: dict[str, list[Target]] = {}
    for target in targets:
        if target.mode in GPU_MODES:
            groups.setdefault(target.result.device, []).append(target)
    return [Exposed(device_name(claim_uid, device), tuple(found)) for device, found in groups.items()]


def _mount(host: Path, container: str, *, read_only: bool = False) -> dict[str, Any]:
    return {
        "hostPath": str(host),
        "containerPath": container,
        "type": "bind",
        "options": ["rbind", "ro" if read_only else "rw", "nosuid", "nodev"],
    }


def _device_edits(exposed: Exposed, mps: MpsFolders | None) -> dict[str, Any]:
    edits: dict[str, Any] = {"deviceNodes": [{"path": node} for node in exposed.first.device_nodes]}
    if exposed.first.mode == "shared":
        if mps is None:
            raise ValueError(f"fractional GPU {exposed.first.uuid}: no MPS daemon")
        edits["env"] = [
            f"CUDA_MPS_PIPE_DIRECTORY={MPS_PIPE}",
            # MPS takes at least 1 %: a share that names no compute still runs kernels.
            f"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE={max(1, exposed.cores)}",
            f"CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0={exposed.memory_bytes // MIB}M",
        ]
        edits["mounts"] = [
            _mount(mps.pipe, MPS_PIPE),
            _mount(mps.log, MPS_LOG, read_only=True),
            _mount(mps.shm, SHM),
        ]
    return edits


def claim_spec(exposed: Sequence[Exposed], mps: Mapping[str, MpsFolders]) -> dict[str, Any]:
    """The spec of a claim's GPUs; `mps` holds the daemon folders of its fractional GPUs by UUID."""
    uuids = ",".join(e.first.uuid for e in exposed)
    return {
        "cdiVersion": CDI_VERSION,
        "kind": CDI_KIND,
        "containerEdits": {
            "env": [f"NVIDIA_VISIBLE_DEVICES={uuids}", f"CUDA_VISIBLE_DEVICES={uuids}"],
            "deviceNodes": [{"path": node} for node in CONTROL_NODES],
        },
        "devices": [
            {"name": e.name, "containerEdits": _device_edits(e, mps.get(e.first.gpu_uuid))} for e in exposed
        ],
    }


def spec_text(spec: Mapping[str, Any]) -> str:
    return json.dumps(spec, indent=1) + "\n"


def write_spec(path: Path, text: str) -> None:
    write_durably(path, text.encode())


def remove_spec(path: Path) -> bool:
    return remove_durably(path)


def our_specs(cdi_dir: Path) -> list[Path]:
    """The spec files this plugin writes that are in the CDI folder now."""
    if not cdi_dir.is_dir():
        return []
    return sorted(p for p in cdi_dir.iterdir() if p.name.startswith(SPEC_PREFIX) and p.suffix == ".json")
