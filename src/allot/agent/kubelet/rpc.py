"""The kubelet's two gRPC services on the wire: names, method paths, handlers, client calls.

* DRA node service, `k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin` (the protobuf package of
  k8s.io/kubelet/pkg/apis/dra/v1): `NodePrepareResources`, `NodeUnprepareResources`. A plugin
  offering it lists `v1.DRAPlugin` in its supported versions (kubelets 1.34 and later).
* Plugin registration, `pluginregistration.Registration` (the package of
  k8s.io/kubelet/pkg/apis/pluginregistration/v1): `GetInfo`, `NotifyRegistrationStatus`.

The handlers are built here rather than by grpc_tools' `_pb2_grpc` generator (which writes
untyped code): each is a method path, the message types' (de)serialisers and a coroutine.
The clients are what the kubelet does, for tests and diagnostics.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypeVar

import grpc
import grpc.aio

from allot.agent.kubelet.proto import dra_pb2 as dra
from allot.agent.kubelet.proto import pluginregistration_pb2 as reg

DRA_SERVICE = "k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin"
DRA_VERSION = "v1.DRAPlugin"
REGISTRATION_SERVICE = "pluginregistration.Registration"
PLUGIN_TYPE = "DRAPlugin"

Request = TypeVar("Request")
Response = TypeVar("Response")


class DraService(Protocol):
    async def node_prepare_resources(
        self, request: dra.NodePrepareResourcesRequest
    ) -> dra.NodePrepareResourcesResponse: ...

    async def node_unprepare_resources(
        self, request: dra.NodeUnprepareResourcesRequest
    ) -> dra.NodeUnprepareResourcesResponse: ...


class RegistrationService(Protocol):
    def get_info(self) -> reg.PluginInfo: ...

    def notify(self, status: reg.RegistrationStatus) -> None: ...


def _unary(
    call: Callable[[Request], Awaitable[Response]],
    decode: Callable[[bytes], Request],
    encode: Callable[[Response], bytes],
) -> grpc.RpcMethodHandler[Request, Response]:
    async def behaviour(request: Request, context: grpc.aio.ServicerContext[Any, Any]) -> Response:
        return await call(request)

    return grpc.unary_unary_rpc_method_handler(
        behaviour, request_deserializer=decode, response_serializer=encode
    )


def dra_handler(service: DraService) -> grpc.GenericRpcHandler:
    return grpc.method_handlers_generic_handler(
        DRA_SERVICE,
        {
            "NodePrepareResources": _unary(
                service.node_prepare_resources,
                dra.NodePrepareResourcesRequest.FromString,
                dra.NodePrepareResourcesResponse.SerializeToString,
            ),
            "NodeUnprepareResources": _unary(
                service.node_unprepare_resources,
                dra.NodeUnprepareResourcesRequest.FromString,
                dra.NodeUnprepareResourcesResponse.SerializeToString,
            ),
        },
    )


def registration_handler(service: RegistrationService) -> grpc.GenericRpcHandler:
    async def get_info(_: reg.InfoRequest) -> reg.PluginInfo:
        return service.get_info()

    async def notify(status: reg.RegistrationStatus) -> reg.RegistrationStatusResponse:
        service.notify(status)
        return reg.RegistrationStatusResponse()

    return grpc.method_handlers_generic_handler(
        REGISTRATION_SERVICE,
        {
            "GetInfo": _unary(get_info, reg.InfoRequest.FromString, reg.PluginInfo.SerializeToString),
            "NotifyRegistrationStatus": _unary(
                notify, reg.RegistrationStatus.FromString, reg.RegistrationStatusResponse.SerializeToString
            ),
        },
    )


def unix_target(path: str) -> str:
    """gRPC's name for a unix socket at an absolute path."""
    return f"unix://{path}"


class DraClient:
    """The kubelet's side of the DRA node service."""

    def __init__(self, channel: grpc.aio.Channel) -> None:
        self.prepare = channel.unary_unary(
            f"/{DRA_SERVICE}/NodePrepareResources",
            request_serializer=dra.NodePrepareResourcesRequest.SerializeToString,
            response_deserializer=dra.NodePrepareResourcesResponse.FromString,
        )
        self.unprepare = channel.unary_unary(
            f"/{DRA_SERVICE}/NodeUnprepareResources",
            request_serializer=dra.NodeUnprepareResourcesRequest.SerializeToString,
            response_deserializer=dra.NodeUnprepareResourcesResponse.FromString,
        )


class RegistrationClient:
    """The kubelet plugin watcher's side of plugin registration."""

    def __init__(self, channel: grpc.aio.Channel) -> None:
        self.get_info = channel.unary_unary(
            f"/{REGISTRATION_SERVICE}/GetInfo",
            request_serializer=reg.InfoRequest.SerializeToString,
            response_deserializer=reg.PluginInfo.FromString,
        )
        self.notify = channel.unary_unary(
            f"/{REGISTRATION_SERVICE}/NotifyRegistrationStatus",
            request_serializer=reg.RegistrationStatus.SerializeToString,
            response_deserializer=reg.RegistrationStatusResponse.FromString,
        )
