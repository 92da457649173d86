"""Counting what the engine asks its scheduler: which pods it tries to bind, which it only looks at."""

from __future__ import annotations

from typing import Any

from allot.engine.engine import Engine


def calls(engine: Engine, method: str) -> list[str]:
    """The pod keys `engine.scheduler.<method>` is called with from now on ("schedule": tries to bind;
    "place": every look, hints' and retries' alike)."""
    seen: list[str] = []
    original = getattr(engine.scheduler, method)

    def counting(pod_key: str, *args: Any, **kwargs: Any) -> Any:
        seen.append(pod_key)
        return original(pod_key, *args, **kwargs)

    setattr(engine.scheduler, method, counting)
    return seen


def looked_at(engine: Engine) -> list[str]:
    """The pod keys whose fit on some node the engine judges from now on: by the filters
    (`scheduler.fits_on`) or by a count of whole GPUs that rules the node out first
    (`Hints.short_of_gpus`)."""
    seen = calls(engine, "fits_on")
    hints: Any = engine._hints
    original = hints.short_of_gpus

    def counting(pod_key: str, *args: Any, **kwargs: Any) -> Any:
        seen.append(pod_key)
        return original(pod_key, *args, **kwargs)

    hints.short_of_gpus = counting
    return seen


def tried_pods(engine: Engine) -> list[str]:
    return calls(engine, "schedule")
