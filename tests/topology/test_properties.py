"""Preferred alignment changes which devices, never whether: checked on random DGX states and claims."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from allot.dra import AllocatedState, Allocation, Allocator, DeviceId, SliceIndex
from allot.model.core import Node
from allot.model.presets.expand import expand_preset
from allot.model.resource import DeviceClass, ResourceClaim, ResourceSlice
from allot.scheduling.topology.alignment import alignment_value, unit_alignment
from allot.scheduling.topology.choice import AlignedChoice
from allot.scheduling.topology.places import place_of
from builders import claim

from .helpers import NUMA_NODE, PCIE_ROOT, request, spec

OBJECTS = expand_preset("dgx-h100", 1)
NODE = next(o for o in OBJECTS if isinstance(o, Node))
SLICES = [o for o in OBJECTS if isinstance(o, ResourceSlice)]
CLASSES = {o.name: o for o in OBJECTS if isinstance(o, DeviceClass)}
DEVICES = {(s.spec.driver, d.name): d for s in SLICES for d in s.spec.devices}
EXCLUSIVE = sorted(
    DeviceId(s.spec.driver, s.spec.pool.name, d.name)
    for s in SLICES
    for d in s.spec.devices
    if s.spec.driver != "dra.cpu"
)


@st.composite
def claims(draw: st.DrawFn) -> ResourceClaim:
    gpus = draw(st.integers(0, 3))
    nics = draw(st.integers(0 if gpus else 1, 3))
    cpus = draw(st.integers(0, 1))
    requests = []
    if gpus:
        requests.append(request("gpu", gpus))
    if nics:
        requests.append(request("nic", nics))
    if cpus:
        requests.append(request("cpu", cpus=str(draw(st.integers(1, 120)))))
    match = draw(st.sampled_from([None, None, PCIE_ROOT, NUMA_NODE]))
    return claim("c", spec(*requests, match=match))


@given(taken=st.sets(st.sampled_from(EXCLUSIVE), max_size=16), wanted=claims())
def test_chooser_allocates_exactly_when_upstream_does(taken: set[DeviceId], wanted: ResourceClaim) -> None:
    allocated = AllocatedState()
    for device in taken:
        allocated.add_device(device)
    allocator = Allocator(CLASSES, SliceIndex(SLICES))
    upstream = allocator.allocate(NODE, [wanted], allocated)
    chosen = AlignedChoice()(allocator, NODE, [wanted], allocated)
    assert isinstance(chosen, Allocation) == isinstance(upstream, Allocation)
    if not isinstance(chosen, Allocation) or not isinstance(upstream, Allocation):
        return
    results = chosen.results[0].devices.results
    assert not {DeviceId(r.driver, r.pool, r.device) for r in results} & taken
    counts = {r.request: 0 for r in results}
    for result in results:
        counts[result.request] += 1
    assert counts == {r.name: r.exactly.count for r in wanted.spec.devices.requests if r.exactly is not None}

    def score(allocation: Allocation) -> float:
        places = [
            place_of(r.driver, DEVICES[(r.driver, r.device)]) for r in allocation.results[0].devices.results
        ]
        alignment = unit_alignment(places)
        return 3.0 if alignment is None else alignment_value(alignment.level, alignment.score)

    # Never worse aligned than upstream's first find (level first, then score).
    assert score(chosen) >= score(upstream)
