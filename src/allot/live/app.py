"""Running the live scheduler as a process: client, leader election, HTTP port, signals.

`run(settings)` is what `allot run` calls: it connects to the API server, serves /metrics,
/healthz and /readyz (and whatever `extend_app` adds: the dashboard), mirrors the cluster,
and schedules while it holds the Lease (or always, without `--leader-elect`). With
`watch_only` (`allot dashboard`) it only mirrors: no cycle, no write, no Lease, no webhook.
SIGTERM and SIGINT stop it gracefully: the writes under
way finish, the Lease is given up. Losing the Lease stops the process with exit status 1,
as kube-scheduler does, so its Deployment starts a fresh replica that rebuilds from the API.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import socket
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from aiohttp import web

from allot.live.binder import DEFAULT_PARALLELISM
from allot.live.client import ApiClient, ClientOptions
from allot.live.http import bound_port, make_app, serve
from allot.live.leader import LeaderElector, LeaseSettings
from allot.live.metrics import Metrics
from allot.live.scheduler import LiveOptions, LiveScheduler
from allot.live.webhook import make_webhook_app, serve_webhook, tls_context
from allot.model.kueue_config import Configuration
from allot.scheduling.profile import Profile

log = logging.getLogger("allot.live")


@dataclass
class RunSettings:
    profiles: Mapping[str, Profile]
    client: ClientOptions = field(default_factory=ClientOptions)
    leader_elect: bool = False
    lease: LeaseSettings = field(default_factory=LeaseSettings)
    identity: str = ""
    bind_address: str = "0.0.0.0"
    port: int = 10259
    kueue: bool = True
    kueue_config: Configuration | None = None
    # Keep freed cohort quota for the least-served queue's blocked head (allot.engine.quota_hold).
    quota_holds: bool = False
    # Hold a node for a large waiting pod, backfilling by runtime estimates (allot.engine.reserve).
    reservations: bool = False
    victim_timeout: float = 300.0
    # podInitialBackoffSeconds and podMaxBackoffSeconds of the KubeSchedulerConfiguration.
    backoff: tuple[float, float] = (1.0, 10.0)
    max_bindings_in_flight: int = DEFAULT_PARALLELISM
    # The Job webhook (TLS); served only when both files are given.
    webhook_port: int = 9443
    webhook_cert_file: str | None = None
    webhook_key_file: str | None = None
    # Mirror only (`allot dashboard`): see the module docstring.
    watch_only: bool = False
    # Adds routes to the HTTP app once the scheduler exists (the dashboard, composed by the CLI).
    extend_app: Callable[[web.Application, LiveScheduler], None] | None = None


class LeadershipLost(RuntimeError):
    """The Lease was lost while leading: the process must stop scheduling at once."""


async def run(settings: RunSettings, stop: asyncio.Event | None = None) -> None:
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        # Not possible outside the main thread (a test running the scheduler in a thread).
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(signum, stop.set)
    identity = settings.identity or f"{socket.gethostname()}_{uuid.uuid4()}"
    client = ApiClient.connect(settings.client)
    metrics = Metrics(profile=sorted(settings.profiles)[0] if settings.profiles else "allot")
    scheduler = LiveScheduler(
        client,
        LiveOptions(
            profiles=settings.profiles,
            kueue=settings.kueue,
            kueue_config=settings.kueue_config,
            quota_holds=settings.quota_holds,
            reservations=settings.reservations,
            identity=identity,
            victim_timeout=settings.victim_timeout,
            backoff=settings.backoff,
            max_bindings_in_flight=settings.max_bindings_in_flight,
            watch_only=settings.watch_only,
        ),
        metrics=metrics,
    )
    elector: LeaderElector | None = None
    if settings.leader_elect and not settings.watch_only:
        elector = LeaderElector(client, identity, settings.lease)
        scheduler.may_schedule = elector.leading.is_set
    runner = None
    if settings.port >= 0:
        app = make_app(
            metrics=metrics,
            synced=lambda: scheduler.readiness.synced,
            leading=lambda: elector is None or elector.leading.is_set(),
            last_step=lambda: scheduler.last_step,
        )
        if settings.extend_app is not None:
            settings.extend_app(app, scheduler)
        runner = await serve(app, settings.bind_address, settings.port)
        log.info("serving /metrics, /healthz, /readyz on %s:%d", settings.bind_address, bound_port(runner))
    webhook = None
    if settings.webhook_cert_file and settings.webhook_key_file and not settings.watch_only:
        context = tls_context(settings.webhook_cert_file, settings.webhook_key_file)
        scheduler_names = tuple(sorted(settings.profiles))
        webhook = await serve_webhook(
            make_webhook_app(scheduler_names=scheduler_names),
            settings.bind_address,
            settings.webhook_port,
            context,
        )
        log.info("serving the Job webhook on %s:%d", settings.bind_address, bound_port(webhook))
    tasks: list[asyncio.Task[object]] = []
    lost = False
    try:
        if elector is not None:
            tasks.append(loop.create_task(_lead(elector, stop, scheduler)))
        await scheduler.run(stop)
        lost = elector is not None and elector.lost.is_set()
        if scheduler.fatal is not None:
            raise scheduler.fatal
    finally:
        stop.set()
        await asyncio.gather(*tasks, return_exceptions=True)
        if elector is not None:
            await elector.release()
        if runner is not None:
            await runner.cleanup()
        if webhook is not None:
            await webhook.cleanup()
        await client.close()
    if lost:
        raise LeadershipLost(f"lost the lease {settings.lease.namespace}/{settings.lease.name}")


async def _lead(elector: LeaderElector, stop: asyncio.Event, scheduler: LiveScheduler) -> None:
    if not await elector.acquire(stop):
        return
    scheduler.wake()
    await elector.keep(stop)
    if elector.lost.is_set():
        stop.set()
