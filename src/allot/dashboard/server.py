"""The dashboard's HTTP routes (aiohttp): the page, its assets, JSON views and live updates.

`attach(app, sources)` adds, beside whatever the app already serves (`/metrics` of `allot run`):

| route | answers |
|---|---|
| `/` and `/static/{file}` | the page, its script and its style: all from the package, nothing from a CDN |
| `/api/v1/meta` | mode (live, watch, simulation), title, runs, the frames' times, version |
| `/api/v1/cluster` | `cluster_view` |
| `/api/v1/nodes`, `/api/v1/nodes/{name}` | a page of nodes (`q`, `pool`, `sort`, `order`, `offset`, `limit`); one node's map |
| `/api/v1/apps`, `/api/v1/apps/{kind}/{name}` | a page of applications of a kind; one application |
| `/api/v1/pods/{namespace}/{name}` | one pod: where it runs or why it waits, its applications |
| `/api/v1/events` | server-sent events: `change` whenever the latest snapshot changed |

Every JSON route takes `run` (one of the sources; default the first) and `t` (a time: the frame
at or before it, for a simulation). A bad request gets a 4xx JSON `{"error": ...}` naming the
parameter; an unexpected failure a 500 with a one-line message, logged; never a traceback.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import signal
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from importlib import resources
from typing import Any

from aiohttp import web

from allot.dashboard.app_view import app_list, app_view, check_kind
from allot.dashboard.apps import NAMESPACED
from allot.dashboard.cluster_view import cluster_view, pod_row
from allot.dashboard.node_view import SORTS, node_list, node_view
from allot.dashboard.query import MAX_QUERY, PAGE, Params, QueryError
from allot.dashboard.source import Sampled, Source

log = logging.getLogger("allot.dashboard")

ASSETS = {
    "app.js": "text/javascript; charset=utf-8",
    "style.css": "text/css; charset=utf-8",
}
COMMON = ("run", "t")
EVENT_TICK = 0.5
KEEPALIVE = 15.0
_STOP: web.AppKey[asyncio.Event] = web.AppKey("dashboard-stop", asyncio.Event)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _asset(name: str) -> bytes:
    return resources.files("allot.dashboard").joinpath("static", name).read_bytes()


def _json(document: Any, status: int = 200) -> web.Response:
    return web.Response(
        body=json.dumps(document, separators=(",", ":")).encode(),
        status=status,
        content_type="application/json",
        headers={"Cache-Control": "no-store"},
    )


@web.middleware
async def _errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    if len(request.query_string) > MAX_QUERY:
        return _json({"error": f"the query string is longer than {MAX_QUERY} characters"}, 414)
    try:
        return await handler(request)
    except QueryError as error:
        return _json({"error": str(error)}, error.status)
    except web.HTTPException:
        raise
    except Exception as error:  # a bug: logged with its traceback, answered in one line
        log.exception("dashboard: %s %s failed", request.method, request.path)
        return _json({"error": f"internal error: {type(error).__name__}: {error}"}, 500)


class Dashboard:
    """The routes over `sources` (run name -> Source)."""

    def __init__(self, sources: Mapping[str, Source]) -> None:
        if not sources:
            raise ValueError("the dashboard needs at least one source")
        self.sources = dict(sources)
        self.index = _asset("index.html")
        self.assets = {name: _asset(name) for name in ASSETS}

    def _source(self, params: Params) -> tuple[str, Source]:
        run = params.text("run") or next(iter(self.sources))
        source = self.sources.get(run)
        if source is None:
            raise QueryError(
                f"run: no run named {run[:60]!r}; expected one of {', '.join(self.sources)}", 404
            )
        return run, source

    def _params(self, request: web.Request, *names: str) -> Params:
        return Params(request.query, (*COMMON, *names))

    def _snapshot(self, params: Params) -> tuple[Source, Any]:
        _, source = self._source(params)
        return source, source.snapshot(params.number("t"))

    # -- routes --------------------------------------------------------------------------

    async def page(self, request: web.Request) -> web.Response:
        return web.Response(body=self.index, content_type="text/html", charset="utf-8")

    async def asset(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        if name not in self.assets:
            raise QueryError(f"no asset named {name[:60]!r}", 404)
        return web.Response(body=self.assets[name], headers={"Content-Type": ASSETS[name]})

    async def meta(self, request: web.Request) -> web.Response:
        params = self._params(request)
        run, source = self._source(params)
        return _json(
            {
                "mode": source.mode,
                "title": source.title,
                "run": run,
                "runs": list(self.sources),
                "times": source.times(),
                "version": source.version(),
            }
        )

    async def cluster(self, request: web.Request) -> web.Response:
        params = self._params(request)
        source, snapshot = self._snapshot(params)
        return _json(cluster_view(snapshot, source.history(snapshot.time)))

    async def nodes(self, request: web.Request) -> web.Response:
        params = self._params(request, "q", "pool", "sort", "order", *PAGE)
        _, snapshot = self._snapshot(params)
        return _json(
            node_list(
                snapshot,
                text=params.text("q"),
                pool=params.text("pool"),
                sort=params.choice("sort", SORTS, "name"),
                descending=params.choice("order", ("asc", "desc"), "asc") == "desc",
                page=params.page(),
            )
        )

    async def node(self, request: web.Request) -> web.Response:
        params = self._params(request)
        _, snapshot = self._snapshot(params)
        return _json(node_view(snapshot, request.match_info["name"]))

    async def apps(self, request: web.Request) -> web.Response:
        params = self._params(request, "kind", "q", *PAGE)
        _, snapshot = self._snapshot(params)
        kind = check_kind(params.text("kind") or "namespace")
        return _json(app_list(snapshot, kind, text=params.text("q"), page=params.page()))

    async def app(self, request: web.Request) -> web.Response:
        params = self._params(request, *PAGE, "roffset", "rlimit")
        _, snapshot = self._snapshot(params)
        kind = check_kind(request.match_info["kind"])
        name = request.match_info["name"]
        if (kind in NAMESPACED) != ("/" in name):
            raise QueryError(f"{kind} names are {'namespace/name' if kind in NAMESPACED else 'plain'}", 404)
        running = Params(
            {"offset": params.raw.get("roffset", ""), "limit": params.raw.get("rlimit", "")}, PAGE
        )
        return _json(
            app_view(snapshot, kind, name, pending_page=params.page(100), running_page=running.page(100))
        )

    async def pod(self, request: web.Request) -> web.Response:
        params = self._params(request)
        _, snapshot = self._snapshot(params)
        key = f"{request.match_info['namespace']}/{request.match_info['name']}"
        pod = next((p for p in snapshot.pods if p.key == key), None)
        if pod is None:
            raise QueryError(f"no pod {key[:120]!r} (a pod leaves the view once it is gone or done)", 404)
        return _json({"time": snapshot.time, **pod_row(pod, snapshot.time), "scheduler": pod.scheduler})

    async def events(self, request: web.Request) -> web.StreamResponse:
        params = self._params(request)
        _, source = self._source(params)
        response = web.StreamResponse(
            headers={"Content-Type": "text/event-stream", "Cache-Control": "no-store"}
        )
        await response.prepare(request)
        stop = request.app[_STOP]
        last: object = None
        quiet = 0.0
        with contextlib.suppress(ConnectionResetError, asyncio.CancelledError):
            while not stop.is_set():
                try:
                    snapshot = source.snapshot()
                    mark: object = (id(snapshot), source.version())
                    data: dict[str, object] = {"time": snapshot.time, "version": source.version()}
                except QueryError as error:
                    mark, data = error.status, {"error": str(error)}
                if mark != last:
                    last, quiet = mark, 0.0
                    await response.write(f"event: change\ndata: {json.dumps(data)}\n\n".encode())
                elif quiet >= KEEPALIVE:
                    quiet = 0.0
                    await response.write(b": keep-alive\n\n")
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), EVENT_TICK)
                quiet += EVENT_TICK
        return response


def attach(app: web.Application, sources: Mapping[str, Source]) -> Dashboard:
    """Add the dashboard's routes to `app`; live sources sample their history while it runs."""
    dashboard = Dashboard(sources)
    app.middlewares.append(_errors)
    app[_STOP] = asyncio.Event()
    routes = app.router
    routes.add_get("/", dashboard.page)
    routes.add_get("/static/{name}", dashboard.asset)
    routes.add_get("/api/v1/meta", dashboard.meta)
    routes.add_get("/api/v1/cluster", dashboard.cluster)
    routes.add_get("/api/v1/nodes", dashboard.nodes)
    routes.add_get("/api/v1/nodes/{name}", dashboard.node)
    routes.add_get("/api/v1/apps", dashboard.apps)
    routes.add_get("/api/v1/apps/{kind}/{name:.+}", dashboard.app)
    routes.add_get("/api/v1/pods/{namespace}/{name}", dashboard.pod)
    routes.add_get("/api/v1/events", dashboard.events)

    async def stop_streams(app: web.Application) -> None:
        app[_STOP].set()

    app.on_shutdown.append(stop_streams)
    attach_samplers(app, [s for s in sources.values() if isinstance(s, Sampled)])
    return dashboard


def attach_samplers(app: web.Application, sources: Sequence[Sampled]) -> None:
    """Run each source's sampler while `app` is served."""

    async def samplers(app: web.Application) -> AsyncIterator[None]:
        stop = asyncio.Event()
        tasks = [asyncio.get_running_loop().create_task(s.run_sampler(stop)) for s in sources]
        yield
        stop.set()
        await asyncio.gather(*tasks, return_exceptions=True)

    if sources:
        app.cleanup_ctx.append(samplers)


async def serve(
    sources: Mapping[str, Source],
    host: str,
    port: int,
    *,
    stop: asyncio.Event | None = None,
    ready: Callable[[str], None] | None = None,
) -> None:
    """Serve the dashboard alone (a simulation, a replay) until `stop` is set or SIGINT/SIGTERM."""
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(signum, stop.set)
    app = web.Application()
    attach(app, sources)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    try:
        bound = next(a for a in runner.addresses if isinstance(a, tuple))
        if ready is not None:
            shown = "127.0.0.1" if host in ("0.0.0.0", "") else host
            ready(f"http://{shown}:{bound[1]}/")
        await stop.wait()
    finally:
        await runner.cleanup()
