"""The agent's API client: kubeconfig file or in-cluster service account, with a QPS / burst limit.

One small function so the live scheduler's client construction can fold into it later.
lightkube has no client-side rate limit; `RateLimit` is a token bucket the
publisher waits on before each request (kubelet plugins default to 5 QPS,
burst 10, and so does the agent).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from pathlib import Path

from lightkube import AsyncClient
from lightkube.config.kubeconfig import KubeConfig

FIELD_MANAGER = "allot-agent"


@dataclass
class RateLimit:
    """At most `qps` requests per second on average, `burst` at once."""

    qps: float = 5.0
    burst: int = 10
    _tokens: float = field(init=False)
    _stamp: float = field(init=False)

    def __post_init__(self) -> None:
        self._tokens = float(self.burst)
        self._stamp = time.monotonic()

    async def wait(self) -> None:
        while True:
            now = time.monotonic()
            self._tokens = min(float(self.burst), self._tokens + (now - self._stamp) * self.qps)
            self._stamp = now
            if self._tokens >= 1.0:
                self._tokens -= 1.0
                return
            await asyncio.sleep((1.0 - self._tokens) / self.qps)


@dataclass
class ApiClient:
    client: AsyncClient
    limit: RateLimit
    field_manager: str = FIELD_MANAGER


def make_client(
    kubeconfig: Path | str | None = None,
    *,
    qps: float = 5.0,
    burst: int = 10,
    field_manager: str = FIELD_MANAGER,
) -> ApiClient:
    """A client from `kubeconfig`, else the pod's service account, else ~/.kube/config."""
    config = KubeConfig.from_file(kubeconfig) if kubeconfig else KubeConfig.from_env()
    return ApiClient(AsyncClient(config, field_manager=field_manager), RateLimit(qps, burst), field_manager)
