"""The kubelet plugin put together: checkpoint recovered, MPS daemons checked, sockets served.

`start_plugin` is what `allot agent run --kubelet-plugin` calls before the agent's publishing
loop; the returned server is stopped on SIGTERM, before the agent lets go of the API.

Drivers: by default the plugin registers every driver the agent publishes. The kubelet calls
the plugin registered under each allocated device's driver and fails the pod when none is, so
a node whose agent publishes NICs (`dra.net`) and CPUs (`dra.cpu`) must also answer for them:
their claims prepare with no CDI device (the device is checked to be this node's, and
recorded); moving interfaces into pods and pinning CPUs is left to DRANET and dra-driver-cpu,
which then run instead of the agent's publishing for those drivers (docs/kubelet-plugin.md).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from allot.agent.inventory import GpuInventory
from allot.agent.kubelet.checkpoint import CheckpointError
from allot.agent.kubelet.claims import ClaimReader
from allot.agent.kubelet.mps import CONTROL, MpsManager, ProcessRunner, SubprocessRunner
from allot.agent.kubelet.server import PLUGINS_DIR, REGISTRY_DIR, PluginServer
from allot.agent.kubelet.service import NodeService, ServiceConfig
from allot.agent.node import NodeDevices
from allot.model.presets.devices import CPU_DRIVER, GPU_DRIVER, NIC_DRIVER
from allot.model.presets.gpu_sharing import HAMI_DRIVER
from allot.scheduling.sharing.domains import TrustDomain

DRIVERS = (GPU_DRIVER, HAMI_DRIVER, NIC_DRIVER, CPU_DRIVER)


class PluginStartError(RuntimeError):
    """The plugin cannot start: a checkpoint that does not load, a folder it cannot write."""


@dataclass(frozen=True, slots=True)
class PluginOptions:
    cdi_dir: Path = Path("/var/run/cdi")
    state_dir: Path = PLUGINS_DIR / "allot-agent"
    registry_dir: Path = REGISTRY_DIR
    plugins_dir: Path = PLUGINS_DIR
    mps_dir: Path = Path("/run/allot/mps")
    mps_control: str = CONTROL
    mps_private_shm: bool = True
    trust_domain: TrustDomain = field(default_factory=TrustDomain)
    toolkit_cdi_kind: str = ""
    drivers: tuple[str, ...] = DRIVERS


async def start_plugin(
    node: str,
    options: PluginOptions,
    reader: ClaimReader,
    *,
    published: Callable[[], NodeDevices],
    nvml: Callable[[], GpuInventory],
    replicas: int = 4,
    runner: ProcessRunner | None = None,
) -> PluginServer:
    """Recover the checkpoint and serve every driver's sockets; PluginStartError saying why not."""
    try:
        return await _start(node, options, reader, published, nvml, replicas, runner)
    except CheckpointError as err:
        raise PluginStartError(str(err)) from None
    except OSError as err:
        raise PluginStartError(f"{err.filename or 'kubelet plugin'}: {err.strerror or err}") from None
    except ValueError as err:  # a socket path too long
        raise PluginStartError(str(err)) from None


async def _start(
    node: str,
    options: PluginOptions,
    reader: ClaimReader,
    published: Callable[[], NodeDevices],
    nvml: Callable[[], GpuInventory],
    replicas: int,
    runner: ProcessRunner | None,
) -> PluginServer:
    mps = MpsManager(
        options.mps_dir,
        runner or SubprocessRunner(),
        control=options.mps_control,
        private_shm=options.mps_private_shm,
    )
    config = ServiceConfig(
        node=node,
        cdi_dir=options.cdi_dir,
        state_dir=options.state_dir,
        trust_domain=options.trust_domain,
        replicas=replicas,
        toolkit_cdi_kind=options.toolkit_cdi_kind,
    )
    service = NodeService(config, reader, mps, published=published, nvml=nvml)
    await service.recover()
    server = PluginServer(
        service, options.drivers, registry_dir=options.registry_dir, plugins_dir=options.plugins_dir
    )
    await server.start()
    return server
