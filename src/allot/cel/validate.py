"""Admission-time checks of the CEL selectors in loaded manifests.

`check_selectors` applies what the API server checks when a DeviceClass,
ResourceClaim or ResourceClaimTemplate is created: each selector expression
is at most 10 Ki long, compiles in the DRA environment, and has a worst-case
cost within the limit. Problems come back as located errors, one per
selector, pointing at the `expression` field; nothing is raised.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from allot.cel.environment import MAX_EXPRESSION_LENGTH, SelectorEnvironment, default_environment
from allot.model.errors import Location, ManifestError
from allot.model.loader import Manifests
from allot.model.resource import (
    DeviceClaim,
    DeviceClass,
    DeviceSelector,
    ResourceClaim,
    ResourceClaimTemplate,
)

__all__ = ["check_selectors", "selector_problem"]


def _selectors(selectors: Sequence[DeviceSelector], path: str) -> Iterator[tuple[str, str]]:
    for index, selector in enumerate(selectors):
        if selector.cel is not None:
            yield f"{path}.selectors[{index}].cel.expression", selector.cel.expression


def _claim_selectors(claim: DeviceClaim, path: str) -> Iterator[tuple[str, str]]:
    for r, request in enumerate(claim.requests):
        if request.exactly is not None:
            yield from _selectors(request.exactly.selectors, f"{path}.requests[{r}].exactly")
        for s, subrequest in enumerate(request.first_available):
            yield from _selectors(subrequest.selectors, f"{path}.requests[{r}].firstAvailable[{s}]")


def selector_problem(expression: str, env: SelectorEnvironment) -> str | None:
    """What the API server would say about `expression`, or None if it would accept it."""
    if len(expression.encode("utf-8")) > MAX_EXPRESSION_LENGTH:
        # Upstream's field.TooLong text; it does not compile such an expression.
        # (allot.model's loader already rejects these; records built in code may not.)
        return f"Too long: may not be more than {MAX_EXPRESSION_LENGTH} bytes"
    error = env.compile_error(expression)
    if error is not None:
        return f"invalid CEL expression: {error}"
    cost = env.estimated_cost(expression)
    if cost > env.cost_limit:
        return f"too complex, exceeds cost limit (estimated worst-case cost {cost} > {env.cost_limit})"
    return None


def check_selectors(manifests: Manifests, env: SelectorEnvironment | None = None) -> list[ManifestError]:
    """Every selector problem in DeviceClasses, ResourceClaims and ResourceClaimTemplates, in input order."""
    env = env if env is not None else default_environment()
    errors: list[ManifestError] = []
    for entry in manifests.entries:
        obj = entry.obj
        found: Iterator[tuple[str, str]]
        if isinstance(obj, DeviceClass):
            found = _selectors(obj.spec.selectors, "spec")
        elif isinstance(obj, ResourceClaim):
            found = _claim_selectors(obj.spec.devices, "spec.devices")
        elif isinstance(obj, ResourceClaimTemplate):
            found = _claim_selectors(obj.spec.spec.devices, "spec.spec.devices")
        else:
            continue
        location: Location = entry.location
        for field, expression in found:
            problem = selector_problem(expression, env)
            if problem is not None:
                errors.append(ManifestError(location.at(field), problem))
    return errors
