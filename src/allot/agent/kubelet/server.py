"""The plugin's sockets, as the kubelet's plugin watcher expects them, one pair per driver:

* `<registry-dir>/<driver>-reg.sock` (registry dir: /var/lib/kubelet/plugins_registry): the
  registration service. The kubelet watches that folder, calls `GetInfo` on a new socket, and
  reads `{type: DRAPlugin, name: <driver>, endpoint: <dra socket>, supportedVersions:
  [v1.DRAPlugin]}`; it then answers with `NotifyRegistrationStatus`.
* `<plugins-dir>/<driver>/dra.sock` (plugins dir: /var/lib/kubelet/plugins): the DRA node
  service the kubelet calls for the claims with devices of `<driver>`.

One gRPC server per driver listens on both, so both exist from the moment it starts: the
kubelet may call as soon as the registration socket appears. A socket left by an earlier run
is removed first. `stop()` removes the registration sockets, so the kubelet deregisters the
drivers; the prepared claims stay in the checkpoint for the next start.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

import grpc.aio

from allot.agent.kubelet import rpc
from allot.agent.kubelet.proto import dra_pb2 as dra
from allot.agent.kubelet.proto import pluginregistration_pb2 as reg
from allot.agent.kubelet.service import NodeService

log = logging.getLogger(__name__)
REGISTRY_DIR = Path("/var/lib/kubelet/plugins_registry")
PLUGINS_DIR = Path("/var/lib/kubelet/plugins")
# A unix socket's path must fit sockaddr_un (108 bytes, with the terminating zero).
MAX_SOCKET_PATH = 107


@dataclass
class DriverEndpoint:
    """One driver's services: its DRA node service and its registration."""

    driver: str
    service: NodeService
    dra_socket: Path
    registration_socket: Path
    registered: bool = False
    registration_error: str = ""

    async def node_prepare_resources(
        self, request: dra.NodePrepareResourcesRequest
    ) -> dra.NodePrepareResourcesResponse:
        return await self.service.prepare(self.driver, list(request.claims))

    async def node_unprepare_resources(
        self, request: dra.NodeUnprepareResourcesRequest
    ) -> dra.NodeUnprepareResourcesResponse:
        return await self.service.unprepare(self.driver, list(request.claims))

    def get_info(self) -> reg.PluginInfo:
        return reg.PluginInfo(
            type=rpc.PLUGIN_TYPE,
            name=self.driver,
            endpoint=str(self.dra_socket),
            supported_versions=[rpc.DRA_VERSION],
        )

    def notify(self, status: reg.RegistrationStatus) -> None:
        self.registered = status.plugin_registered
        self.registration_error = status.error
        if status.plugin_registered:
            log.info("driver %s: registered with the kubelet", self.driver)
        else:
            log.error("driver %s: the kubelet refused the registration: %s", self.driver, status.error)


def _listen_path(path: Path) -> str:
    if len(str(path)) > MAX_SOCKET_PATH:
        raise ValueError(f"{path}: longer than a unix socket path may be ({MAX_SOCKET_PATH} bytes)")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    return rpc.unix_target(str(path))


@dataclass
class PluginServer:
    service: NodeService
    drivers: tuple[str, ...]
    registry_dir: Path = REGISTRY_DIR
    plugins_dir: Path = PLUGINS_DIR
    endpoints: dict[str, DriverEndpoint] = field(default_factory=dict)
    _servers: list[grpc.aio.Server] = field(default_factory=list)

    async def start(self) -> None:
        """Listen on every driver's sockets (ValueError for a path too long for a socket); on
        any failure nothing is left listening."""
        try:
            await self._start()
        except BaseException:
            await self.stop(0)
            raise

    async def _start(self) -> None:
        for driver in self.drivers:
            endpoint = DriverEndpoint(
                driver,
                self.service,
                dra_socket=self.plugins_dir / driver / "dra.sock",
                registration_socket=self.registry_dir / f"{driver}-reg.sock",
            )
            server = grpc.aio.server()
            server.add_generic_rpc_handlers((rpc.dra_handler(endpoint), rpc.registration_handler(endpoint)))
            server.add_insecure_port(_listen_path(endpoint.dra_socket))
            server.add_insecure_port(_listen_path(endpoint.registration_socket))
            await server.start()
            self.endpoints[driver] = endpoint
            self._servers.append(server)
            log.info(
                "driver %s: serving %s, registration %s",
                driver,
                endpoint.dra_socket,
                endpoint.registration_socket,
            )

    async def stop(self, grace: float = 5.0) -> None:
        """Stop serving; the sockets go (the kubelet deregisters), the checkpoint stays."""
        for endpoint in self.endpoints.values():
            endpoint.registration_socket.unlink(missing_ok=True)
        for server in self._servers:
            await server.stop(grace)
        for endpoint in self.endpoints.values():
            endpoint.dra_socket.unlink(missing_ok=True)
        self._servers.clear()
        self.endpoints.clear()
