"""A simulation seen through the dashboard: snapshots ("frames") on a grid of simulated time.

`FrameRecorder` rides along a `Simulation`: it observes every cycle (a `DecisionLog`, as the live
scheduler's dashboard does) and, at the first instant at or after each grid point `every`
seconds apart, takes a snapshot of the engine's state and writes it to a directory:

    <directory>/frames.json         {"title", "policy", "times": [...], "history": [[...], ...]}
    <directory>/frame-000042.msgpack  one Snapshot each (msgspec's MessagePack)

Frames go to disk as they are taken, so a long run holds one in memory at a time; the index is
written by `finish`. The directory is the recorded simulation that `allot dashboard --replay` serves again.
`FrameSource(directory)` is the dashboard's `Source` over such a directory: the frame at or
before the asked time, a few kept in memory (`CACHED_FRAMES`).
"""

from __future__ import annotations

import bisect
import json
from collections import OrderedDict
from pathlib import Path

import msgspec

from allot.dashboard.decisions import DecisionLog
from allot.dashboard.history import Point, totals
from allot.dashboard.model import Snapshot
from allot.dashboard.query import QueryError
from allot.dashboard.snapshot import Snapshotter, always_running
from allot.engine.decisions import CycleResult
from allot.sim.simulator import Simulation

INDEX = "frames.json"
CACHED_FRAMES = 8
DEFAULT_FRAMES = 120
# A recording holds at most this many frames (each is one file).
MAX_FRAMES = 10_000
_ENCODER = msgspec.msgpack.Encoder()
_DECODER = msgspec.msgpack.Decoder(Snapshot)


def frame_path(directory: Path, number: int) -> Path:
    return directory / f"frame-{number:06d}.msgpack"


class FrameRecorder:
    """See the module docstring. Attach before `Simulation.run()`; call `finish(end)` after."""

    def __init__(self, simulation: Simulation, directory: Path, *, every: float, title: str = "") -> None:
        if every <= 0:
            raise ValueError("frames: expected a positive interval")
        self.simulation = simulation
        self.directory = directory
        self.every = every
        self.title = title
        self.log = DecisionLog()
        self.snapshotter = Snapshotter()
        self.times: list[float] = []
        self.history: list[Point] = []
        self._next = 0.0
        directory.mkdir(parents=True, exist_ok=True)
        # A folder used before holds another run's frames: they go, this run's take their place.
        for stale in [*directory.glob("frame-*.msgpack"), directory / INDEX]:
            stale.unlink(missing_ok=True)
        simulation.observers.append(self._observe)
        previous = simulation.progress

        def progress(now: float) -> None:
            self.capture(now)
            if previous is not None:
                previous(now)

        simulation.progress = progress

    def _observe(self, result: CycleResult, now: float) -> None:
        engine = self.simulation.engine
        local = engine.admission.local_queues if engine.admission is not None else {}

        def queue_of(key: str) -> str:
            queue = local.get(key)
            return queue.spec.cluster_queue if queue is not None else ""

        self.log.observe(result, now, engine.state, queue_of)

    def capture(self, now: float, *, force: bool = False) -> None:
        if (now < self._next and not force) or len(self.times) >= MAX_FRAMES:
            return
        if self.times and self.times[-1] == now:
            return
        engine = self.simulation.engine
        snapshot = self.snapshotter.take_engine(
            engine,
            time=now,
            source="simulation",
            title=self.title,
            reasons=engine.pending_reasons(self.log.reasons),
            log=self.log,
            running=always_running,
        )
        frame_path(self.directory, len(self.times)).write_bytes(_ENCODER.encode(snapshot))
        self.times.append(now)
        self.history.append(totals(snapshot))
        while self._next <= now:
            self._next += self.every

    def finish(self, end: float) -> None:
        """The state at the end of the run is the last frame."""
        self.capture(end, force=True)
        self._write_index()

    def _write_index(self) -> None:
        index = {
            "title": self.title,
            "policy": self.simulation.policy.name,
            "times": self.times,
            "history": [list(msgspec.to_builtins(p)) for p in self.history],
        }
        (self.directory / INDEX).write_text(json.dumps(index), encoding="utf-8")


class RecordingError(ValueError):
    """A directory that does not hold a recorded simulation, or holds a damaged one."""


class FrameSource:
    """A `Source` over a recorded simulation directory (see the module docstring)."""

    mode = "simulation"

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        path = directory / INDEX
        try:
            index = json.loads(path.read_text(encoding="utf-8"))
            self.title = str(index.get("title") or index.get("policy") or directory.name)
            self.policy = str(index.get("policy") or "")
            self._times = [float(t) for t in index["times"]]
            self._history = [msgspec.convert(p, Point) for p in index["history"]]
        except FileNotFoundError:
            raise RecordingError(
                f"{path}: not found; expected a directory written by allot simulate --serve"
            ) from None
        except (OSError, ValueError, KeyError, TypeError, msgspec.ValidationError) as error:
            raise RecordingError(f"{path}: not a frame index ({error})") from None
        if not self._times:
            raise RecordingError(f"{path}: the recording holds no frame")
        self._cache: OrderedDict[int, Snapshot] = OrderedDict()

    def times(self) -> list[float]:
        return list(self._times)

    def version(self) -> int:
        return 0

    def _index(self, at: float | None) -> int:
        if at is None:
            return len(self._times) - 1
        return max(0, bisect.bisect_right(self._times, at) - 1)

    def snapshot(self, at: float | None = None) -> Snapshot:
        number = self._index(at)
        cached = self._cache.get(number)
        if cached is not None:
            self._cache.move_to_end(number)
            return cached
        path = frame_path(self.directory, number)
        try:
            snapshot = _DECODER.decode(path.read_bytes())
        except (OSError, msgspec.DecodeError, msgspec.ValidationError) as error:
            raise QueryError(f"frame {number} of the recording cannot be read: {error}", 500) from None
        self._cache[number] = snapshot
        while len(self._cache) > CACHED_FRAMES:
            self._cache.popitem(last=False)
        return snapshot

    def history(self, until: float | None = None) -> list[Point]:
        return [p for p in self._history if until is None or p.time <= until]
