"""NodePrepareResources and NodeUnprepareResources: the devices a claim was allocated, made real.

`NodeService.prepare(driver, claims)` does, per claim the kubelet names (one claim's failure
is that claim's `error`; the others go on):

1. a claim already prepared by this driver's plugin (the checkpoint has it) gets the same
   answer again, its MPS daemons started again if they died and its CDI spec written again if
   it is gone (a reboot empties /var/run/cdi): the kubelet repeats calls;
2. read the claim; it must exist with the kubelet's UID and be allocated for this node;
3. each result of this driver becomes a `Target`, checked against NVML now (`targets`);
4. the node's own books: a claim with a fractional GPU holds no other GPU (its processes reach
   one MPS daemon); the shares prepared on a fractional GPU add up to at most 100 % and its
   memory, the claims on a time-sliced GPU to at most its replicas; a GPU without memory
   isolation holds one trust domain, so a claim of another domain than the claims already
   prepared there is refused;
5. start the MPS daemon of each fractional GPU (if not running), write the claim's CDI spec,
   then record the claim in the checkpoint; the answer lists each device with its CDI ids.

`unprepare(driver, claims)` removes a prepared claim's CDI spec and checkpoint entry and stops
the MPS daemon of a fractional GPU whose last claim it was. A claim it never prepared (or
already unprepared) succeeds: the kubelet repeats calls, also after restarts.

Calls are serialised (one lock): a prepare sees every earlier one in the checkpoint.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from allot.agent.inventory import GpuInventory
from allot.agent.kubelet import cdi
from allot.agent.kubelet import checkpoint as store
from allot.agent.kubelet.cdi import MpsFolders
from allot.agent.kubelet.checkpoint import Checkpoint, MpsDaemon, PreparedClaim, PreparedDevice
from allot.agent.kubelet.claims import ClaimReader
from allot.agent.kubelet.mps import MpsError, MpsManager
from allot.agent.kubelet.proto import dra_pb2 as dra
from allot.agent.kubelet.targets import GIB, MIB, PrepareError, Target, resolve
from allot.agent.node import NodeDevices
from allot.model.presets.devices import GPU_DRIVER
from allot.model.presets.gpu_sharing import HAMI_DRIVER
from allot.model.resource import AllocationResult, ResourceClaim
from allot.scheduling.sharing.domains import NAMESPACE, TrustDomain

log = logging.getLogger(__name__)
GPU_DRIVERS = (GPU_DRIVER, HAMI_DRIVER)


@dataclass(frozen=True, slots=True)
class ServiceConfig:
    node: str
    cdi_dir: Path
    state_dir: Path
    trust_domain: TrustDomain = field(default_factory=TrustDomain)
    replicas: int = 4  # slots of a time-sliced GPU (the agent's --time-slicing-replicas)
    # Also hand the runtime the NVIDIA container toolkit's CDI device of each GPU
    # (`<kind>=<UUID>`, e.g. nvidia.com/gpu), which brings the driver's libraries.
    toolkit_cdi_kind: str = ""

    @property
    def checkpoint_path(self) -> Path:
        return self.state_dir / "checkpoint.json"


def _size(value: int) -> str:
    return f"{value / GIB:.1f} GiB" if value >= GIB else f"{value // MIB} MiB"


def _for_node(allocation: AllocationResult, node: str) -> bool:
    """Whether the allocation's node selector admits `node` (by the node name fields the
    allocator writes; a term without such a field admits any node)."""
    terms = allocation.node_selector.node_selector_terms if allocation.node_selector else ()
    if not terms:
        return True
    for term in terms:
        names = [r for r in term.match_fields if r.key == "metadata.name" and r.operator == "In"]
        if all(node in r.values for r in names):
            return True
    return False


def _base_request(request: str) -> str:
    """A result's request without its subrequest ("gpu/large" -> "gpu"), as containers name it."""
    return request.split("/", 1)[0]


class NodeService:
    """See the module docstring; `published` is what the agent publishes, `nvml` asks NVML now."""

    def __init__(
        self,
        config: ServiceConfig,
        reader: ClaimReader,
        mps: MpsManager,
        *,
        published: Callable[[], NodeDevices],
        nvml: Callable[[], GpuInventory],
    ) -> None:
        self.config = config
        self.reader = reader
        self.mps = mps
        self.published = published
        self.nvml = nvml
        self.checkpoint = store.load(config.checkpoint_path, config.node)
        self.lock = asyncio.Lock()

    # -- start ---------------------------------------------------------------------------------

    async def recover(self) -> None:
        """After a start: the daemons the prepared claims need run again, and what no prepared
        claim needs (a spec or a daemon left by a crash between two steps) is removed."""
        async with self.lock:
            needed = {uuid for claim in self.checkpoint.claims for uuid in claim.mps_gpus()}
            for uuid in sorted(needed):
                try:
                    await asyncio.to_thread(self.mps.ensure, uuid)
                except MpsError as err:
                    log.error("%s (its claims' containers cannot reach MPS until it starts)", err)
            for uuid in await asyncio.to_thread(self.mps.present):
                if uuid not in needed:
                    await self._stop_daemon(uuid)
            kept = {claim.cdi_spec for claim in self.checkpoint.claims}
            for path in cdi.our_specs(self.config.cdi_dir):
                if str(path) not in kept:
                    cdi.remove_spec(path)
                    log.info("removed %s: no prepared claim has it", path)
            for claim in self.checkpoint.claims:
                await self._restore_spec(claim)
            await asyncio.to_thread(self._save, self._with_daemons(self.checkpoint))

    # -- the two calls ---------------------------------------------------------------------------

    async def prepare(self, driver: str, claims: Sequence[dra.Claim]) -> dra.NodePrepareResourcesResponse:
        response = dra.NodePrepareResourcesResponse()
        async with self.lock:
            for claim in claims:
                if claim.uid in response.claims:
                    continue
                try:
                    devices = await self._prepare(driver, claim)
                    response.claims[claim.uid].devices.extend(devices)
                except PrepareError as err:
                    log.warning("prepare %s %s/%s: %s", driver, claim.namespace, claim.name, err)
                    response.claims[claim.uid].error = str(err)
                except OSError as err:  # a spec or the checkpoint that could not be written
                    log.error("prepare %s %s/%s: %s", driver, claim.namespace, claim.name, err)
                    response.claims[claim.uid].error = f"{err.filename or 'prepare'}: {err.strerror or err}"
        return response

    async def unprepare(self, driver: str, claims: Sequence[dra.Claim]) -> dra.NodeUnprepareResourcesResponse:
        response = dra.NodeUnprepareResourcesResponse()
        async with self.lock:
            for claim in claims:
                try:
                    await self._unprepare(driver, claim.uid)
                    response.claims[claim.uid].error = ""
                except OSError as err:
                    log.error("unprepare %s %s/%s: %s", driver, claim.namespace, claim.name, err)
                    response.claims[claim.uid].error = f"{err.filename or 'unprepare'}: {err.strerror or err}"
        return response

    # -- prepare -----------------------------------------------------------------------------

    async def _prepare(self, driver: str, ref: dra.Claim) -> list[dra.Device]:
        if not (ref.namespace and ref.name and ref.uid):
            raise PrepareError(
                f"malformed claim reference (namespace {ref.namespace!r}, name {ref.name!r}, "
                f"uid {ref.uid!r}): all three are required"
            )
        done = self.checkpoint.find(driver, ref.uid)
        if done is not None:
            for uuid in sorted(done.mps_gpus()):
                await self._ensure_daemon(uuid)
            await self._restore_spec(done)
            return self._answer(done)
        claim = await self.reader.claim(ref.namespace, ref.name)
        where = f"claim {ref.namespace}/{ref.name}"
        if claim is None:
            raise PrepareError(f"{where}: not found")
        if claim.metadata.uid != ref.uid:
            raise PrepareError(
                f"{where}: has UID {claim.metadata.uid}, the kubelet asked for {ref.uid} "
                "(deleted and created again?)"
            )
        allocation = claim.status.allocation
        if allocation is None:
            raise PrepareError(f"{where}: not allocated")
        if not _for_node(allocation, self.config.node):
            raise PrepareError(f"{where}: allocated for another node, this is node {self.config.node}")
        published = self.published()
        nvml = await asyncio.to_thread(self.nvml)
        targets = []
        for result in allocation.devices.results:
            if result.driver == driver:
                try:
                    targets.append(resolve(result, node=self.config.node, published=published, nvml=nvml))
                except PrepareError as err:
                    raise PrepareError(f"{where}: {err}") from None
        self._check_books(claim, allocation, targets)
        domain = (
            await self._domain(claim) if any(t.mode in ("shared", "time-sliced") for t in targets) else ""
        )
        self._check_domain(claim, targets, domain)
        prepared = await self._materialise(driver, claim, targets, domain)
        return self._answer(prepared)

    def _check_books(self, claim: ResourceClaim, allocation: AllocationResult, targets: list[Target]) -> None:
        where = f"claim {claim.namespace}/{claim.name}"
        gpus = {(r.driver, r.device) for r in allocation.devices.results if r.driver in GPU_DRIVERS}
        for target in targets:
            if target.mode == "shared" and len(gpus) > 1:
                raise PrepareError(
                    f"{where}: holds fractional GPU {target.result.device} and {len(gpus) - 1} other GPU(s); "
                    "a container reaches one MPS daemon, so a claim with a fractional GPU may hold no other GPU"
                )
        for uuid in sorted({t.gpu_uuid for t in targets if t.mode in ("shared", "time-sliced")}):
            mine = [t for t in targets if t.gpu_uuid == uuid]
            gpu = mine[0].gpu
            assert gpu is not None
            others = [
                d
                for c in self.checkpoint.claims
                for d in c.devices
                if d.gpu_uuid == uuid and d.mode == mine[0].mode
            ]
            if mine[0].mode == "shared":
                cores = sum(d.cores for d in others) + sum(t.cores for t in mine)
                memory = sum(d.memory_bytes for d in others) + sum(t.memory_bytes for t in mine)
                if cores > 100 or memory > gpu.memory_bytes:
                    raise PrepareError(
                        f"{where}: fractional GPU {mine[0].result.device} ({uuid}) would hold {cores} % and "
                        f"{_size(memory)} of {_size(gpu.memory_bytes)} with the claims prepared on it: "
                        "the node does not have what the allocation says"
                    )
            elif len({(c.driver, c.uid) for c in self.checkpoint.claims if uuid in c.shared_gpus()}) + 1 > (
                self.config.replicas
            ):
                raise PrepareError(
                    f"{where}: time-sliced GPU {mine[0].result.device} ({uuid}) already runs "
                    f"{self.config.replicas} claims, its number of replicas"
                )

    async def _domain(self, claim: ResourceClaim) -> str:
        trust = self.config.trust_domain
        if not trust.isolates:
            return ""
        namespace = claim.namespace
        if trust.kind == NAMESPACE:
            return trust.domain_for(namespace, {}, {})
        namespace_labels = await self.reader.namespace_labels(namespace)
        pods = [r for r in claim.status.reserved_for if r.resource == "pods" and not r.api_group]
        domains = set()
        for pod in pods:
            labels = await self.reader.pod_labels(namespace, pod.name)
            domains.add(trust.domain_for(namespace, labels or {}, namespace_labels))
        if not domains:
            domains.add(trust.domain_for(namespace, {}, namespace_labels))
        if len(domains) > 1:
            raise PrepareError(
                f"claim {namespace}/{claim.name}: reserved for pods of trust domains {', '.join(sorted(domains))}; "
                "a GPU without memory isolation holds one"
            )
        return domains.pop()

    def _check_domain(self, claim: ResourceClaim, targets: list[Target], domain: str) -> None:
        if not domain:
            return
        for uuid in sorted({t.gpu_uuid for t in targets if t.mode in ("shared", "time-sliced")}):
            for holder in self.checkpoint.claims:
                if uuid in holder.shared_gpus() and holder.trust_domain and holder.trust_domain != domain:
                    device = next(t.result.device for t in targets if t.gpu_uuid == uuid)
                    raise PrepareError(
                        f"claim {claim.namespace}/{claim.name}: GPU {device} ({uuid}) has no memory isolation "
                        f"and holds trust domain {holder.trust_domain} (claim {holder.namespace}/{holder.name}); "
                        f"this claim is of {domain}"
                    )

    async def _materialise(
        self, driver: str, claim: ResourceClaim, targets: list[Target], domain: str
    ) -> PreparedClaim:
        uid = claim.metadata.uid
        started: list[str] = []
        folders: dict[str, MpsFolders] = {}
        path = cdi.spec_path(self.config.cdi_dir, driver, uid)
        exposed = cdi.exposed_devices(uid, targets)
        try:
            for uuid in sorted({t.gpu_uuid for t in targets if t.mode == "shared"}):
                folders[uuid], fresh = await self._ensure_daemon(uuid)
                if fresh:
                    started.append(uuid)
            text = cdi.spec_text(cdi.claim_spec(exposed, folders)) if exposed else ""
            if text:
                await asyncio.to_thread(cdi.write_spec, path, text)
            prepared = PreparedClaim(
                driver=driver,
                uid=uid,
                namespace=claim.namespace,
                name=claim.name,
                devices=tuple(self._device(uid, t) for t in targets),
                cdi_spec=str(path) if exposed else "",
                cdi_spec_text=text,
                trust_domain=domain,
            )
            checkpoint = self.checkpoint.with_claim(prepared)
            await asyncio.to_thread(self._save, self._with_daemons(checkpoint))
        except BaseException:
            cdi.remove_spec(path)
            for uuid in started:
                await self._stop_daemon(uuid)
            raise
        log.info("prepared %s %s/%s: %d devices", driver, claim.namespace, claim.name, len(targets))
        return prepared

    def _device(self, uid: str, target: Target) -> PreparedDevice:
        ids: list[str] = []
        if target.mode in cdi.GPU_MODES:
            ids.append(cdi.qualified(cdi.device_name(uid, target.result.device)))
            if self.config.toolkit_cdi_kind:
                ids.append(f"{self.config.toolkit_cdi_kind}={target.uuid}")
        return PreparedDevice(
            request_names=(_base_request(target.result.request),),
            pool=target.result.pool,
            device=target.result.device,
            cdi_ids=tuple(ids),
            mode=target.mode,
            gpu_uuid=target.gpu_uuid,
            uuid=target.uuid,
            cores=target.cores,
            memory_bytes=target.memory_bytes,
        )

    @staticmethod
    def _answer(prepared: PreparedClaim) -> list[dra.Device]:
        return [
            dra.Device(
                request_names=list(d.request_names),
                pool_name=d.pool,
                device_name=d.device,
                cdi_device_ids=list(d.cdi_ids),
            )
            for d in prepared.devices
        ]

    async def _restore_spec(self, claim: PreparedClaim) -> None:
        """Write a prepared claim's spec again where it is gone (a reboot empties /var/run/cdi)."""
        if claim.cdi_spec and claim.cdi_spec_text and not Path(claim.cdi_spec).exists():
            await asyncio.to_thread(cdi.write_spec, Path(claim.cdi_spec), claim.cdi_spec_text)
            log.info("claim %s/%s: wrote its CDI spec %s again", claim.namespace, claim.name, claim.cdi_spec)

    # -- unprepare ---------------------------------------------------------------------------

    async def _unprepare(self, driver: str, uid: str) -> None:
        prepared = self.checkpoint.find(driver, uid)
        if prepared is None:
            return
        if prepared.cdi_spec:
            await asyncio.to_thread(cdi.remove_spec, Path(prepared.cdi_spec))
        checkpoint = self._with_daemons(self.checkpoint.without_claim(driver, uid))
        await asyncio.to_thread(self._save, checkpoint)
        still = {d.gpu_uuid for d in checkpoint.mps_daemons}
        for uuid in sorted(prepared.mps_gpus() - still):
            await self._stop_daemon(uuid)
        log.info("unprepared %s %s/%s", driver, prepared.namespace, prepared.name)

    # -- daemons and the checkpoint ---------------------------------------------------------------

    async def _ensure_daemon(self, uuid: str) -> tuple[MpsFolders, bool]:
        try:
            return await asyncio.to_thread(self.mps.ensure, uuid)
        except MpsError as err:
            raise PrepareError(str(err)) from None

    async def _stop_daemon(self, uuid: str) -> None:
        try:
            await asyncio.to_thread(self.mps.stop, uuid)
        except MpsError as err:
            # The claim is gone either way; the next start tries again.
            log.error("%s", err)

    def _with_daemons(self, checkpoint: Checkpoint) -> Checkpoint:
        daemons = []
        for uuid in sorted({uuid for claim in checkpoint.claims for uuid in claim.mps_gpus()}):
            folders = self.mps.folders(uuid)
            daemons.append(
                MpsDaemon(gpu_uuid=uuid, pipe=str(folders.pipe), log=str(folders.log), shm=str(folders.shm))
            )
        return checkpoint.with_daemons(daemons)

    def _save(self, checkpoint: Checkpoint) -> None:
        store.save(self.config.checkpoint_path, checkpoint)
        self.checkpoint = checkpoint
