"""allot.dra: the structured-parameters device allocator of Kubernetes DRA (1.35 semantics).

Layering: imports only `allot.model` and `allot.cel`. Entry point:

    allocator = Allocator(classes, SliceIndex(slices, taint_rules), features=Features.all())
    outcome = allocator.allocate(node, claims, AllocatedState.from_claims(allocated_claims))

`outcome` is an `Allocation` (results in claim order) or a `NoAllocation`
(with a `Diagnosis`); bad input raises `AllocationError`. See docs/dra.md.
"""

from allot.dra.allocator import INVALID_POOLS, Allocation, Allocator, NoAllocation
from allot.dra.diagnosis import Diagnosis, RequestDiagnosis
from allot.dra.errors import AllocationError
from allot.dra.features import Features
from allot.dra.ids import DeviceId, EitherFilter, parse_device_id
from allot.dra.pools import NodePools, SliceIndex
from allot.dra.results import ShareIdFactory, default_share_id
from allot.dra.scoring import Candidate, PickedDevice, Scorer
from allot.dra.state import AllocatedState

__all__ = [
    "INVALID_POOLS",
    "AllocatedState",
    "Allocation",
    "AllocationError",
    "Allocator",
    "Candidate",
    "DeviceId",
    "Diagnosis",
    "EitherFilter",
    "Features",
    "NoAllocation",
    "NodePools",
    "PickedDevice",
    "RequestDiagnosis",
    "Scorer",
    "ShareIdFactory",
    "SliceIndex",
    "default_share_id",
    "parse_device_id",
]
