"""`allot agent run` as a process: signals, the /metrics server, the kubelet plugin, the agent
loop, a clean exit.

SIGTERM (what kubelet sends a DaemonSet pod) and SIGINT stop the loop; the
agent then stops serving the kubelet (its sockets go, its checkpoint stays),
closes its connections and exits 0 without touching the published slices
(see `allot.agent.runner`).
"""

from __future__ import annotations

import asyncio
import logging
import signal

from prometheus_client import start_http_server

from allot.agent.client import ApiClient
from allot.agent.kubelet.claims import ApiClaimReader
from allot.agent.kubelet.plugin import PluginOptions, start_plugin
from allot.agent.metrics import AgentMetrics
from allot.agent.runner import Agent, AgentOptions
from allot.agent.sources import Sources

log = logging.getLogger(__name__)


def parse_address(address: str) -> tuple[str, int]:
    """ "0.0.0.0:9464", ":9464" or "9464" -> (host, port)."""
    host, _, port = address.rpartition(":")
    return host or "0.0.0.0", int(port)


async def serve(
    api: ApiClient,
    sources: Sources,
    options: AgentOptions,
    *,
    metrics_address: str = "",
    kubelet: PluginOptions | None = None,
) -> None:
    metrics = AgentMetrics()
    server = None
    if metrics_address:
        host, port = parse_address(metrics_address)
        server, _ = start_http_server(port, host, registry=metrics.registry)
        log.info("metrics on http://%s:%d/metrics", host, port)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    agent = Agent(api, sources, options, metrics=metrics)
    plugin = None
    try:
        if kubelet is not None:
            plugin = await start_plugin(
                options.node,
                kubelet,
                ApiClaimReader(api),
                published=lambda: agent.devices,
                nvml=sources.gpu.inventory,
                replicas=options.config.replicas,
            )
        await agent.run(stop)
    finally:
        if plugin is not None:
            await plugin.stop()
        await agent.close()
        if server is not None:
            server.shutdown()
            server.server_close()
