"""List-then-watch for one kind, for as long as the scheduler runs.

A `Reflector` lists every object of its kind (in pages), remembers the list's
resourceVersion, and watches from there with bookmarks on, so a reconnect resumes where
it left off. When the server says the version is gone (410, after etcd compaction) it
lists again and reports the difference against what it held as ordinary events, so the
consumer never sees a gap. When the server cannot be reached it backs off (doubling,
capped) and tries again; a kind that stops being served (a CRD removed) reports its
objects deleted and waits to be discovered again.

The reflector's `store` is the API's view of the kind (decoded records by key), which
the consumer may read at any time (for example to restore what the API holds after a
failed write). Events go to a sink callable, in the order the API sent them.
"""

from __future__ import annotations

import asyncio
import enum
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgspec

from allot.live.client import ApiClient, ApiError, Gone, NotFound, Unavailable
from allot.live.kinds import DecodeError, Kind, decode_object
from allot.model.base import Object

log = logging.getLogger("allot.live.reflector")

PAGE_SIZE = 500
# The server closes a watch after this long (as client-go asks: 5-10 minutes); we then resume.
WATCH_TIMEOUT_SECONDS = 300
BACKOFF_INITIAL = 0.2
BACKOFF_MAX = 30.0


class EventType(enum.Enum):
    ADDED = "ADDED"
    MODIFIED = "MODIFIED"
    DELETED = "DELETED"


@dataclass(frozen=True, slots=True)
class WatchEvent:
    kind: Kind
    type: EventType
    obj: Object
    # The version the consumer held before (MODIFIED and DELETED), when the reflector had one.
    old: Object | None = None


Sink = Callable[[WatchEvent], None]


class _Restart(Exception):
    """Start over with a fresh list (410, or a watch error event)."""


class Reflector:
    """Mirrors one kind; see the module docstring."""

    def __init__(
        self,
        client: ApiClient,
        kind: Kind,
        version: str,
        sink: Sink,
        *,
        page_size: int = PAGE_SIZE,
        watch_timeout: int = WATCH_TIMEOUT_SECONDS,
    ) -> None:
        self.client = client
        self.kind = kind
        self.version = version
        self.api_version = f"{kind.group}/{version}" if kind.group else version
        self.sink = sink
        self.page_size = page_size
        self.watch_timeout = watch_timeout
        self.store: dict[str, Object] = {}
        self.resource_version = ""
        self.synced = asyncio.Event()
        # Counters a test or a metric can read.
        self.lists = 0
        self.relists_after_gone = 0
        self.reconnects = 0
        self.served = True
        self._stopping = False

    def stop(self) -> None:
        self._stopping = True

    async def run(self) -> None:
        delay = BACKOFF_INITIAL
        need_list = True
        while not self._stopping:
            try:
                if need_list:
                    await self._list()
                    need_list = False
                await self._watch()
                delay = BACKOFF_INITIAL
            except (Gone, _Restart) as reason:
                if isinstance(reason, Gone):
                    self.relists_after_gone += 1
                log.info("%s: starting over with a list (%s)", self.kind.name, reason)
                need_list = True
            except NotFound:
                # The kind is not served (any more): its objects are gone.
                self._forget_all()
                self.served = False
                return
            except (Unavailable, ApiError) as error:
                self.reconnects += 1
                log.warning("%s: %s; retrying in %.1f s", self.kind.name, error, delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, BACKOFF_MAX)

    async def _list(self) -> None:
        path = self.kind.path(self.version)
        fresh: dict[str, Object] = {}
        params = {"limit": str(self.page_size)}
        version = ""
        while True:
            body = await self.client.get(path, params)
            for raw in body.get("items") or ():
                obj = self._decode(raw)
                if obj is not None:
                    fresh[obj.key] = obj
            metadata = body.get("metadata") or {}
            version = metadata.get("resourceVersion", version)
            token = metadata.get("continue")
            if not token:
                break
            params = {"limit": str(self.page_size), "continue": token}
        self.lists += 1
        # Report the difference against what we held, so the consumer sees no gap.
        for key in sorted(set(self.store) - set(fresh)):
            gone = self.store.pop(key)
            self.sink(WatchEvent(self.kind, EventType.DELETED, gone, gone))
        for key in sorted(fresh):
            obj = fresh[key]
            previous = self.store.get(key)
            self.store[key] = obj
            if previous is None:
                self.sink(WatchEvent(self.kind, EventType.ADDED, obj))
            elif previous.metadata.resource_version != obj.metadata.resource_version:
                self.sink(WatchEvent(self.kind, EventType.MODIFIED, obj, previous))
        self.resource_version = version
        self.served = True
        self.synced.set()

    async def _watch(self) -> None:
        params = {
            "watch": "true",
            "allowWatchBookmarks": "true",
            "resourceVersion": self.resource_version,
            "timeoutSeconds": str(self.watch_timeout),
        }
        path = self.kind.path(self.version)
        async for line in self.client.stream_lines(path, params, read_timeout=self.watch_timeout + 30):
            if self._stopping:
                return
            event = msgspec.json.decode(line)
            kind = event.get("type")
            raw = event.get("object") or {}
            if kind == "BOOKMARK":
                version = (raw.get("metadata") or {}).get("resourceVersion")
                if version:
                    self.resource_version = version
                continue
            if kind == "ERROR":
                code = raw.get("code")
                if code == 410:
                    raise Gone(410, str(raw.get("reason", "Expired")), str(raw.get("message", "")))
                raise _Restart(f"watch error {code}: {raw.get('message', '')}")
            obj = self._decode(raw)
            if obj is None:
                continue
            self.resource_version = obj.metadata.resource_version or self.resource_version
            old = self.store.get(obj.key)
            if kind == "DELETED":
                self.store.pop(obj.key, None)
                self.sink(WatchEvent(self.kind, EventType.DELETED, obj, old))
            else:
                self.store[obj.key] = obj
                event_type = EventType.ADDED if old is None else EventType.MODIFIED
                self.sink(WatchEvent(self.kind, event_type, obj, old))

    def _decode(self, raw: dict[str, Any]) -> Object | None:
        try:
            return decode_object(raw, self.kind.model, self.api_version)
        except DecodeError as error:
            # One object allot cannot read must not stop the scheduler: it is left out, loudly.
            log.error("%s", error)
            return None

    def _forget_all(self) -> None:
        for key in sorted(self.store):
            old = self.store.pop(key)
            self.sink(WatchEvent(self.kind, EventType.DELETED, old, old))
        self.synced.set()
