"""What the plugin reads from the API server: the claim the kubelet names, and for trust domains
that look at labels, the labels of the pods it is reserved for and of their namespace.

The kubelet sends only a claim's namespace, name and UID; the allocation is in the claim's
status, read here (the plugin needs `get` on resourceclaims, and on pods and namespaces for
`label:` and `localQueue` trust domains). A claim that is gone, or whose UID differs from the
kubelet's (deleted and created again under the same name), is an error for that claim.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

import httpx2
from lightkube.core.exceptions import ApiError
from lightkube.resources.core_v1 import Namespace, Pod
from lightkube.resources.resource_v1 import ResourceClaim as KubeClaim

from allot.agent.client import ApiClient
from allot.agent.kubelet.targets import PrepareError
from allot.model.codec import decode
from allot.model.resource import ResourceClaim


def _unreachable(what: str, err: httpx2.HTTPError) -> PrepareError:
    # lightkube's ApiError is an HTTP error too: callers catch it first.
    return PrepareError(f"{what}: cannot reach the API server: {err}")


class ClaimReader(Protocol):
    async def claim(self, namespace: str, name: str) -> ResourceClaim | None:
        """The claim, or None when there is none by that name."""
        ...

    async def pod_labels(self, namespace: str, name: str) -> Mapping[str, str] | None:
        """A pod's labels, or None when it is gone."""
        ...

    async def namespace_labels(self, name: str) -> Mapping[str, str]: ...


@dataclass
class ApiClaimReader:
    """`ClaimReader` over the agent's API client (its rate limit applies)."""

    api: ApiClient

    async def claim(self, namespace: str, name: str) -> ResourceClaim | None:
        await self.api.limit.wait()
        try:
            found = await self.api.client.get(KubeClaim, name, namespace=namespace)
        except ApiError as err:
            if err.status.code == 404:
                return None
            raise PrepareError(f"claim {namespace}/{name}: cannot read it: {err.status.message}") from None
        except httpx2.HTTPError as err:
            raise _unreachable(f"claim {namespace}/{name}", err) from None
        return decode(found.to_dict(), ResourceClaim)

    async def pod_labels(self, namespace: str, name: str) -> Mapping[str, str] | None:
        await self.api.limit.wait()
        try:
            pod = await self.api.client.get(Pod, name, namespace=namespace)
        except ApiError as err:
            if err.status.code == 404:
                return None
            raise PrepareError(f"pod {namespace}/{name}: cannot read it: {err.status.message}") from None
        except httpx2.HTTPError as err:
            raise _unreachable(f"pod {namespace}/{name}", err) from None
        return dict((pod.metadata.labels if pod.metadata else None) or {})

    async def namespace_labels(self, name: str) -> Mapping[str, str]:
        await self.api.limit.wait()
        try:
            namespace = await self.api.client.get(Namespace, name)
        except ApiError as err:
            if err.status.code == 404:
                return {}
            raise PrepareError(f"namespace {name}: cannot read it: {err.status.message}") from None
        except httpx2.HTTPError as err:
            raise _unreachable(f"namespace {name}", err) from None
        return dict((namespace.metadata.labels if namespace.metadata else None) or {})
