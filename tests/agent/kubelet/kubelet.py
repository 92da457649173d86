"""The kubelet's side of the DRA plugin conversation, for the tests (no kubelet runs here).

What a kubelet does, in order: its plugin watcher finds `<driver>-reg.sock` in the registry
folder, calls `GetInfo`, checks the answer (type DRAPlugin, the driver's name, a DRA version
it speaks, an endpoint), and tells the plugin with `NotifyRegistrationStatus`; then, for each
pod, it reads the pod's claims from the API server and calls `NodePrepareResources` on the
endpoint of the claims' drivers with each claim's namespace, UID and name, and
`NodeUnprepareResources` once the pod is gone.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc.aio

from allot.agent.kubelet import rpc
from allot.agent.kubelet.proto import dra_pb2 as dra
from allot.agent.kubelet.proto import pluginregistration_pb2 as reg
from controlplane import ControlPlane


class RegistrationRefused(AssertionError):
    pass


@dataclass
class Kubelet:
    registry_dir: Path
    endpoints: dict[str, str]

    @classmethod
    def empty(cls, registry_dir: Path) -> Kubelet:
        return cls(registry_dir, {})

    async def register(self, driver: str) -> reg.PluginInfo:
        socket = self.registry_dir / f"{driver}-reg.sock"
        async with grpc.aio.insecure_channel(rpc.unix_target(str(socket))) as channel:
            client = rpc.RegistrationClient(channel)
            info = await client.get_info(reg.InfoRequest(), timeout=10)
            problem = ""
            if info.type != "DRAPlugin":
                problem = f"type {info.type!r} is not DRAPlugin"
            elif info.name != driver:
                problem = f"name {info.name!r} is not the socket's driver {driver!r}"
            elif "v1.DRAPlugin" not in info.supported_versions:
                problem = f"none of {list(info.supported_versions)} is v1.DRAPlugin"
            elif not Path(info.endpoint).is_socket():
                problem = f"endpoint {info.endpoint} is not a socket"
            await client.notify(
                reg.RegistrationStatus(plugin_registered=not problem, error=problem), timeout=10
            )
        if problem:
            raise RegistrationRefused(problem)
        self.endpoints[driver] = info.endpoint
        return info

    async def prepare(self, driver: str, *claims: dra.Claim) -> dict[str, dra.NodePrepareResourceResponse]:
        async with grpc.aio.insecure_channel(rpc.unix_target(self.endpoints[driver])) as channel:
            response = await rpc.DraClient(channel).prepare(
                dra.NodePrepareResourcesRequest(claims=claims), timeout=30
            )
        return dict(response.claims)

    async def unprepare(self, driver: str, *claims: dra.Claim) -> dict[str, str]:
        async with grpc.aio.insecure_channel(rpc.unix_target(self.endpoints[driver])) as channel:
            response = await rpc.DraClient(channel).unprepare(
                dra.NodeUnprepareResourcesRequest(claims=claims), timeout=30
            )
        return {uid: entry.error for uid, entry in response.claims.items()}


def claim_ref(plane: ControlPlane, namespace: str, name: str) -> dra.Claim:
    """The claim as the kubelet names it, read from the API server."""
    found: Any = plane.get("resourceclaim", name, namespace=namespace)
    return dra.Claim(namespace=namespace, uid=found["metadata"]["uid"], name=name)
