"""The API client: one HTTP connection pool to the API server, rate-limited like client-go.

Configuration (server, TLS, credentials) comes from lightkube: a kubeconfig file, the
`KUBECONFIG` variable, or the pod's service account when running in a cluster. Requests
and responses are JSON bytes: objects are decoded straight into allot's own records
(`allot.live.kinds`), so the scheduler keeps one model of every object.

Writes name their precondition (a resourceVersion in the patch), and failures come back as
`ApiError` subclasses by HTTP status, so callers can tell a conflict (refresh and retry) from
a missing object (forget it) from an outage (back off).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2 as httpx
import msgspec
from lightkube.config.client_adapter import AsyncClient as _adapter_client
from lightkube.config.client_adapter import ConnectionParams
from lightkube.config.kubeconfig import KubeConfig

JSON = "application/json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"


class ApiError(Exception):
    """The API server answered with an error status (or could not be reached: status 0)."""

    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(f"{status} {reason}: {message}")
        self.status = status
        self.reason = reason
        self.message = message


class Conflict(ApiError):
    """409: the object changed since the version the write was based on (or already exists)."""


class NotFound(ApiError):
    """404: no such object (or no such resource: a CRD that is not installed)."""


class Gone(ApiError):
    """410: the resourceVersion a list or watch started from was compacted away."""


class Unavailable(ApiError):
    """The server could not be reached or answered 5xx / 429: try again after a back-off."""


def _error(status: int, body: bytes) -> ApiError:
    reason, message = "", body.decode(errors="replace")[:500]
    try:
        decoded = msgspec.json.decode(body)
        if isinstance(decoded, dict):
            reason = str(decoded.get("reason", ""))
            message = str(decoded.get("message", message))
    except msgspec.DecodeError:
        pass
    kind: type[ApiError] = ApiError
    if status == 409:
        kind = Conflict
    elif status == 404:
        kind = NotFound
    elif status == 410:
        kind = Gone
    elif status == 429 or status >= 500:
        kind = Unavailable
    return kind(status, reason, message)


class RateLimiter:
    """A token bucket: `qps` tokens a second, at most `burst` saved up (client-go's default limiter).

    A non-positive qps means no limit.
    """

    def __init__(self, qps: float, burst: int) -> None:
        self.qps = qps
        self.burst = max(burst, 1)
        self._tokens = float(self.burst)
        self._stamp = time.monotonic()
        self._lock = asyncio.Lock()

    async def acquire(self) -> None:
        if self.qps <= 0:
            return
        async with self._lock:
            now = time.monotonic()
            self._tokens = min(self.burst, self._tokens + (now - self._stamp) * self.qps)
            self._stamp = now
            if self._tokens < 1:
                wait = (1 - self._tokens) / self.qps
                await asyncio.sleep(wait)
                self._stamp = time.monotonic()
                self._tokens = 0.0
            else:
                self._tokens -= 1


@dataclass(frozen=True, slots=True)
class ClientOptions:
    """`qps` / `burst`: client-side rate limit (kube-scheduler's defaults are 50 and 100)."""

    kubeconfig: str | None = None
    context: str | None = None
    qps: float = 50.0
    burst: int = 100
    timeout: float = 30.0


def load_config(kubeconfig: str | None, context: str | None = None) -> Any:
    """A lightkube SingleConfig from a kubeconfig file, $KUBECONFIG, ~/.kube/config or the
    in-cluster service account (in that order)."""
    config = KubeConfig.from_file(Path(kubeconfig)) if kubeconfig else KubeConfig.from_env()
    single = config.get(context_name=context) if context else config.get()
    if single is None:
        raise ValueError(f"kubeconfig {kubeconfig or '(default)'}: no context {context or 'current-context'}")
    return single


class ApiClient:
    """Requests to one API server; see the module docstring."""

    def __init__(self, http: httpx.AsyncClient, *, qps: float = 50.0, burst: int = 100) -> None:
        self.http = http
        self.limiter = RateLimiter(qps, burst)
        # Writes and reads counted by verb, for metrics.
        self.requests: dict[str, int] = {}

    @classmethod
    def connect(cls, options: ClientOptions) -> ApiClient:
        config = load_config(options.kubeconfig, options.context)
        params = ConnectionParams(timeout=httpx.Timeout(options.timeout), trust_env=False)
        http = _adapter_client(config, params)
        return cls(http, qps=options.qps, burst=options.burst)

    def sibling(self) -> ApiClient:
        """A client on the same connection pool with a rate limit of its own (kube-scheduler sends
        its events through a client of their own, so events never slow bindings down)."""
        sibling = ApiClient(self.http, qps=self.limiter.qps, burst=self.limiter.burst)
        sibling.requests = self.requests
        return sibling

    @property
    def server(self) -> str:
        return str(self.http.base_url)

    async def close(self) -> None:
        await self.http.aclose()

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: object | None = None,
        content_type: str = JSON,
        limited: bool = True,
    ) -> bytes:
        """One request; the response body, or an ApiError."""
        if limited:
            await self.limiter.acquire()
        self.requests[method] = self.requests.get(method, 0) + 1
        content = None
        headers = {"Accept": JSON}
        if body is not None:
            content = body if isinstance(body, bytes) else msgspec.json.encode(body)
            headers["Content-Type"] = content_type
        try:
            response = await self.http.request(
                method, path, params=dict(params or {}), content=content, headers=headers
            )
        except httpx.HTTPError as error:
            raise Unavailable(0, type(error).__name__, str(error) or type(error).__name__) from error
        if response.status_code >= 400:
            raise _error(response.status_code, response.content)
        return bytes(response.content)

    async def get(self, path: str, params: Mapping[str, str] | None = None) -> Any:
        return msgspec.json.decode(await self.request("GET", path, params=params))

    async def post(self, path: str, body: object) -> Any:
        return msgspec.json.decode(await self.request("POST", path, body=body))

    async def patch(self, path: str, body: object, *, content_type: str = MERGE_PATCH,
                    params: Mapping[str, str] | None = None) -> Any:  # fmt: skip
        return msgspec.json.decode(
            await self.request("PATCH", path, body=body, content_type=content_type, params=params)
        )

    async def delete(self, path: str, body: object | None = None) -> Any:
        return msgspec.json.decode(await self.request("DELETE", path, body=body))

    async def stream_lines(
        self, path: str, params: Mapping[str, str], *, read_timeout: float | None = None
    ) -> AsyncIterator[bytes]:
        """A watch: the response's lines as they arrive (one JSON event each)."""
        await self.limiter.acquire()
        self.requests["WATCH"] = self.requests.get("WATCH", 0) + 1
        timeout = httpx.Timeout(30.0, read=read_timeout)
        try:
            async with self.http.stream(
                "GET", path, params=dict(params), headers={"Accept": JSON}, timeout=timeout
            ) as response:
                if response.status_code >= 400:
                    raise _error(response.status_code, await response.aread())
                async for line in response.aiter_lines():
                    if line:
                        yield line.encode()
        except httpx.HTTPError as error:
            raise Unavailable(0, type(error).__name__, str(error) or type(error).__name__) from error
