"""The claims the plugin prepared, on disk: what a restarted plugin unprepares, and nothing else.

One JSON file (`<state-dir>/checkpoint.json`), replaced whole after every change:

```json
{"apiVersion": "allot.dev/v1alpha1", "kind": "KubeletPluginCheckpoint", "node": "gpu-7",
 "claims": [{"driver": "hami-core-gpu.project-hami.io", "uid": "...", "namespace": "team-a",
             "name": "pod-gpu-x7k2", "trustDomain": "namespace=team-a",
             "cdiSpec": "/var/run/cdi/allot.dev-gpu_hami-core-gpu.project-hami.io-<uid>.json",
             "cdiSpecText": "<what was written there>",
             "devices": [{"requestNames": ["gpu"], "pool": "gpu-7", "device": "gpu-0",
                          "cdiIds": ["allot.dev/gpu=<uid>-gpu-0"], "mode": "shared",
                          "gpuUuid": "GPU-...", "uuid": "GPU-...", "cores": 30,
                          "memoryBytes": 10737418240}]}],
 "mpsDaemons": [{"gpuUuid": "GPU-...", "pipe": "...", "log": "...", "shm": "..."}]}
```

A claim is keyed by (driver, UID): the kubelet sends a claim with devices of two drivers to
both plugins. A checkpoint that does not load stops the plugin with the file and field named:
forgetting prepared claims would leak MPS daemons and CDI specs, and lose the trust domain a
shared GPU holds.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from allot.agent.kubelet.files import write_durably

CHECKPOINT_VERSION = "allot.dev/v1alpha1"
CHECKPOINT_KIND = "KubeletPluginCheckpoint"


class _Record(msgspec.Struct, frozen=True, kw_only=True, rename="camel", forbid_unknown_fields=True):
    pass


class PreparedDevice(_Record, frozen=True, kw_only=True):
    """One allocated device as prepared: what the kubelet was told, and what it holds."""

    request_names: tuple[str, ...] = ()
    pool: str
    device: str
    cdi_ids: tuple[str, ...] = ()
    mode: str = ""  # whole | time-sliced | shared | mig | nic | cpu
    gpu_uuid: str = ""  # the physical GPU (the parent of a MIG device)
    uuid: str = ""  # what the container sees: the GPU's UUID, or the MIG device's
    cores: int = 0  # fractional GPUs: the share of SMs, in percent
    memory_bytes: int = 0  # fractional and time-sliced GPUs: the memory share


class PreparedClaim(_Record, frozen=True, kw_only=True):
    driver: str
    uid: str
    namespace: str
    name: str
    devices: tuple[PreparedDevice, ...] = ()
    cdi_spec: str = ""  # the spec file written for it; "" when none (NICs, CPUs)
    # What was written there: /var/run/cdi is a tmpfs, gone after a reboot, while the kubelet
    # prepares the claims of the node's pods again; the plugin writes it again from here.
    cdi_spec_text: str = ""
    trust_domain: str = ""  # the domain its shared GPUs hold; "" when it holds none

    @property
    def key(self) -> tuple[str, str]:
        return (self.driver, self.uid)

    def shared_gpus(self) -> set[str]:
        """The GPUs without memory isolation it uses (fractional, time-sliced), by UUID."""
        return {d.gpu_uuid for d in self.devices if d.mode in ("shared", "time-sliced")}

    def mps_gpus(self) -> set[str]:
        return {d.gpu_uuid for d in self.devices if d.mode == "shared"}


class MpsDaemon(_Record, frozen=True, kw_only=True):
    gpu_uuid: str
    pipe: str
    log: str
    shm: str


class Checkpoint(_Record, frozen=True, kw_only=True):
    api_version: str = CHECKPOINT_VERSION
    kind: str = CHECKPOINT_KIND
    node: str = ""
    claims: tuple[PreparedClaim, ...] = ()
    mps_daemons: tuple[MpsDaemon, ...] = ()

    def find(self, driver: str, uid: str) -> PreparedClaim | None:
        return next((c for c in self.claims if c.key == (driver, uid)), None)

    def with_claim(self, claim: PreparedClaim) -> Checkpoint:
        others = [c for c in self.claims if c.key != claim.key]
        return msgspec.structs.replace(self, claims=_sorted([*others, claim]))

    def without_claim(self, driver: str, uid: str) -> Checkpoint:
        return msgspec.structs.replace(self, claims=tuple(c for c in self.claims if c.key != (driver, uid)))

    def with_daemons(self, daemons: list[MpsDaemon]) -> Checkpoint:
        return msgspec.structs.replace(self, mps_daemons=tuple(sorted(daemons, key=lambda d: d.gpu_uuid)))


def _sorted(claims: list[PreparedClaim]) -> tuple[PreparedClaim, ...]:
    return tuple(sorted(claims, key=lambda c: (c.driver, c.uid)))


class CheckpointError(ValueError):
    """A checkpoint file that does not load; the message names the file and the field."""


def load(path: Path, node: str) -> Checkpoint:
    """The checkpoint at `path`; an empty one for `node` where there is none yet."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return Checkpoint(node=node)
    except OSError as err:
        raise CheckpointError(f"{path}: cannot read: {err.strerror}") from None
    try:
        checkpoint = msgspec.json.decode(raw, type=Checkpoint)
    except msgspec.ValidationError as err:
        message, _, where = str(err).partition(" - at `$.")
        field = where.rstrip("`") if where else "(top level)"
        raise CheckpointError(f"{path}: {field}: {message}") from None
    except msgspec.DecodeError as err:
        raise CheckpointError(f"{path}: not JSON: {err}") from None
    if checkpoint.kind != CHECKPOINT_KIND or checkpoint.api_version != CHECKPOINT_VERSION:
        raise CheckpointError(
            f"{path}: expected kind {CHECKPOINT_KIND} of {CHECKPOINT_VERSION}, "
            f"got {checkpoint.kind} of {checkpoint.api_version}"
        )
    if checkpoint.node and checkpoint.node != node:
        raise CheckpointError(f"{path}: node: written for node {checkpoint.node}, this is node {node}")
    return checkpoint


def save(path: Path, checkpoint: Checkpoint) -> None:
    write_durably(path, msgspec.json.format(msgspec.json.encode(checkpoint), indent=1) + b"\n", mode=0o600)
