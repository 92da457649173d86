"""Running several simulations at once, one process each, with progress reported back.

`run_all(tasks, workers=..., progress=...)` runs each task (a callable that
takes a progress callback and returns a `SimResult`) and returns the
results in task order. With more than one worker the tasks run in forked
child processes, started before the caller's progress display starts any
thread; each child sends `(task, simulated time)` progress messages and
then its pickled result over one queue. A task that raises in a child is
re-raised in the parent as `TaskFailed` with the child's message (the
simulation error classes stay importable on both sides). Results do not
depend on the number of workers: each simulation is deterministic on its
own.
"""

from __future__ import annotations

import multiprocessing
import os
import queue as queues
from collections.abc import Callable, Sequence
from typing import Any

from allot.sim.records import SimResult

Task = Callable[[Callable[[float], None]], SimResult]
Progress = Callable[[int, float], None]
_POLL_SECONDS = 0.1


class TaskFailed(RuntimeError):
    """A task raised in its worker process; the message is the child's exception."""

    def __init__(self, index: int, kind: str, message: str) -> None:
        super().__init__(message)
        self.index = index
        self.kind = kind


def default_workers(tasks: int) -> int:
    return max(1, min(tasks, os.cpu_count() or 1))


def _reporter(report: Progress, index: int) -> Callable[[float], None]:
    return lambda now: report(index, now)


def _child(task: Task, index: int, channel: Any) -> None:
    try:
        result = task(lambda now: channel.put(("progress", index, now)))
    except BaseException as err:
        channel.put(("error", index, (type(err).__name__, str(err))))
        return
    channel.put(("result", index, result))


def run_all(
    tasks: Sequence[Task],
    *,
    workers: int,
    progress: Progress | None = None,
    before_wait: Callable[[], None] | None = None,
) -> list[SimResult]:
    """Run every task; `before_wait` runs once the children exist (start progress displays there)."""
    report: Progress = progress or (lambda _index, _now: None)
    if workers <= 1 or len(tasks) <= 1 or "fork" not in multiprocessing.get_all_start_methods():
        if before_wait is not None:
            before_wait()
        return [task(_reporter(report, i)) for i, task in enumerate(tasks)]
    context = multiprocessing.get_context("fork")
    channel = context.Queue()
    results: dict[int, SimResult] = {}
    pending = list(enumerate(tasks))
    running: dict[int, Any] = {}
    started = False
    try:
        while pending or running:
            while pending and len(running) < workers:
                index, task = pending.pop(0)
                process = context.Process(target=_child, args=(task, index, channel), daemon=True)
                process.start()
                running[index] = process
            if not started:
                started = True
                if before_wait is not None:
                    before_wait()
            try:
                kind, index, payload = channel.get(timeout=_POLL_SECONDS)
            except queues.Empty:
                # A child that exits cleanly has sent its result first; only a crash ends without one.
                for index, process in list(running.items()):
                    if process.exitcode not in (None, 0):
                        raise TaskFailed(
                            index, "Exited", f"worker exited with status {process.exitcode}"
                        ) from None
                continue
            if kind == "progress":
                report(index, payload)
            elif kind == "result":
                results[index] = payload
                running.pop(index).join()
            else:
                running.pop(index).join()
                raise TaskFailed(index, payload[0], payload[1])
    finally:
        for process in running.values():
            process.terminate()
    return [results[i] for i in range(len(tasks))]
