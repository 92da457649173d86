"""The live scheduler's HTTP port: /metrics, /healthz, /readyz (and the dashboard's routes).

`/healthz` answers 200 while the scheduling loop is alive (it ran within `stale_after`
seconds, or is still starting); `/readyz` answers 200 once every watched kind has been
listed and the state built, and says whether this replica leads. Both answer in plain text,
as the Kubernetes components' endpoints do, so probes and people read them alike.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from aiohttp import web

from allot.live.metrics import Metrics

PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8"


def make_app(
    *,
    metrics: Metrics,
    synced: Callable[[], bool],
    leading: Callable[[], bool],
    last_step: Callable[[], float],
    stale_after: float = 60.0,
) -> web.Application:
    app = web.Application()

    async def metrics_handler(request: web.Request) -> web.Response:
        return web.Response(body=metrics.exposition(), headers={"Content-Type": PROMETHEUS_TEXT})

    async def healthz(request: web.Request) -> web.Response:
        last = last_step()
        if synced() and last and time.monotonic() - last > stale_after:
            return web.Response(
                status=503, text=f"the scheduling loop has not run for {time.monotonic() - last:.0f} s\n"
            )
        return web.Response(text="ok\n")

    async def readyz(request: web.Request) -> web.Response:
        if not synced():
            return web.Response(status=503, text="not synced: still listing the cluster\n")
        role = "leader" if leading() else "standby"
        return web.Response(text=f"ok ({role})\n")

    app.router.add_get("/metrics", metrics_handler)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/livez", healthz)
    app.router.add_get("/readyz", readyz)
    return app


async def serve(app: web.Application, host: str, port: int) -> web.AppRunner:
    """Start serving `app`; returns the runner (its `cleanup()` stops it). Port 0 picks a free one."""
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    return runner


def bound_port(runner: web.AppRunner) -> int:
    """The port a runner listens on (for port 0)."""
    for address in runner.addresses:
        if isinstance(address, tuple) and len(address) >= 2:
            return int(address[1])
    raise RuntimeError("the HTTP server is not listening")
