"""DynamicResources' node score (Kubernetes 1.35+): earlier `firstAvailable` alternatives score higher.

A request with `firstAvailable` lists sub-requests in the order the user
prefers them. kube-scheduler's DynamicResources plugin scores a feasible
node by the alternatives its allocation takes there: for every claim of the
pod (allocated before, or allocated on this node now) and every prioritized
request, the sub-request at position i (0-based) that was allocated adds
8 - i (8 = the most sub-requests a request may list). The node scores are
then normalised as kube-scheduler's `DefaultNormalizeScore` does:
100 x raw // highest raw, all 0 when the highest is 0.

A pod with nothing to allocate gets 0 everywhere, as upstream scores only
nodes it allocated for.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import numpy.typing as npt

from allot.model.resource import AllocationResult, ResourceClaim

# resourceapi.FirstAvailableDeviceRequestMaxSize
FIRST_AVAILABLE_MAX_SIZE = 8
MAX_NODE_SCORE = 100

FloatArray = npt.NDArray[np.float64]


def has_alternatives(claims: Iterable[ResourceClaim]) -> bool:
    """Whether any request of `claims` lists prioritized alternatives."""
    return any(r.first_available for claim in claims for r in claim.spec.devices.requests)


def claim_rank(claim: ResourceClaim, allocation: AllocationResult) -> int:
    """What one claim's allocation adds: 8 - i for each allocated sub-request at position i."""
    taken = {result.request for result in allocation.devices.results if "/" in result.request}
    if not taken:
        return 0
    rank = 0
    for request in claim.spec.devices.requests:
        for position, sub in enumerate(request.first_available):
            if f"{request.name}/{sub.name}" in taken:
                rank += FIRST_AVAILABLE_MAX_SIZE - position
    return rank


def allocation_rank(claims: Sequence[ResourceClaim], allocations: Sequence[AllocationResult]) -> int:
    """The raw score of one node: claims paired with their allocations there."""
    return sum(claim_rank(c, a) for c, a in zip(claims, allocations, strict=True))


def normalize(raw: Sequence[int] | npt.NDArray[np.int64]) -> FloatArray:
    """`DefaultNormalizeScore(100, reverse=false)`: 100 x raw // max, integer division; 0 if max is 0."""
    values = np.asarray(raw, dtype=np.int64)
    high = int(values.max()) if values.size else 0
    if high <= 0:
        return np.zeros(values.size, dtype=np.float64)
    result: FloatArray = (MAX_NODE_SCORE * values // high).astype(np.float64)
    return result
