"""Independent runs on a Ray cluster (`--ray ADDRESS`): the optional alternative to local processes.

`ray_map(function, items, address=...)` runs `function(item)` for every
item as a Ray task and returns the results in item order; `on_result(index,
result)` is called as each finishes (in any order). ADDRESS is what
`ray.init` takes: `auto` (the cluster this machine belongs to),
`ray://HOST:10001` (a remote cluster's client port) or `local` (start a
private cluster on this machine, for trying it out). Each run is
deterministic on its own, so where it ran changes nothing in its result.

Ray is an optional extra (`pip install 'allot[ray]'`); the workers need
allot installed too (the same version, for the pickled tasks to load).
A task that raised comes back as `TaskFailed` with the worker's exception
type and message.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from allot.sim.parallel import Task, TaskFailed
from allot.sim.records import SimResult

Item = TypeVar("Item")
Result = TypeVar("Result")


class RayUnavailable(RuntimeError):
    """Ray is not installed, or the cluster at the address cannot be reached."""


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise RayUnavailable("--ray needs Ray: pip install 'allot[ray]'") from None
    return ray


def ray_map(
    function: Callable[[Item], Result],
    items: Sequence[Item],
    *,
    address: str,
    on_result: Callable[[int, Result], None] | None = None,
) -> list[Result]:
    ray = _ray()
    if not ray.is_initialized():
        try:
            ray.init(address=address, log_to_driver=False, include_dashboard=False)
        except (ConnectionError, RuntimeError, ValueError) as err:
            raise RayUnavailable(f"cannot reach the Ray cluster at {address}: {err}") from None
    remote = ray.remote(function)
    refs = [remote.remote(item) for item in items]
    position = {ref: i for i, ref in enumerate(refs)}
    results: dict[int, Result] = {}
    waiting = list(refs)
    while waiting:
        done, waiting = ray.wait(waiting, num_returns=1)
        for ref in done:
            index = position[ref]
            try:
                result: Result = ray.get(ref)
            except ray.exceptions.RayTaskError as err:
                cause = err.cause if isinstance(getattr(err, "cause", None), BaseException) else err
                raise TaskFailed(index, type(cause).__name__, str(cause)) from None
            results[index] = result
            if on_result is not None:
                on_result(index, result)
    return [results[i] for i in range(len(items))]


def _quiet(task: Task) -> SimResult:
    return task(lambda _now: None)


def run_tasks_on_ray(
    tasks: Sequence[Task], *, address: str, done: Callable[[int], None] | None = None
) -> list[SimResult]:
    """`allot.sim.parallel.run_all`'s tasks as Ray tasks (progress is reported per finished task)."""
    return ray_map(_quiet, tasks, address=address, on_result=(lambda i, _r: done(i)) if done else None)
