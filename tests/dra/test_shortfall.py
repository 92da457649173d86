"""Fractional claims that cannot all fit are diagnosed by a sum, naming the capacity, before any search.

Twenty-five claims for 10Gi of three shared 80Gi GPUs used to spend the allocator's whole step budget
trying every order of the shares ("search stopped after 100001 steps"). The total (250Gi of 240Gi) or
the shares per device (three 30Gi shares never fit one 80Gi GPU) answer it at once.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from unittest import mock

from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from allot.cli.main import cli
from allot.dra import AllocatedState, Allocation, NoAllocation
from fuzzing import examples

DRIVER = "gpu.example.com"


def _manifests(devices: int, claims: int, share: str, capacity: str = "80Gi") -> str:
    docs = [
        "apiVersion: v1\nkind: Node\nmetadata: {name: gpu-node-1}\n",
        f"apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {{name: {DRIVER}}}\n"
        f'spec:\n  selectors: [{{cel: {{expression: device.driver == "{DRIVER}"}}}}]\n',
        f"apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {{name: gpus}}\nspec:\n"
        f"  driver: {DRIVER}\n  nodeName: gpu-node-1\n"
        "  pool: {name: gpu-node-1, generation: 1, resourceSliceCount: 1}\n  devices:\n"
        + "".join(
            f"  - {{name: gpu-{i}, allowMultipleAllocations: true, capacity: {{memory: {{value: {capacity}}}}}}}\n"
            for i in range(devices)
        ),
        *(
            f"apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {{name: c{i}, namespace: default}}\n"
            f"spec:\n  devices:\n    requests:\n    - name: slice\n      exactly:\n"
            f"        deviceClassName: {DRIVER}\n        capacity: {{requests: {{memory: {share}}}}}\n"
            for i in range(claims)
        ),
    ]
    return "---\n".join(docs)


def _allocate(tmp_path: Path, text: str) -> Any:
    path = tmp_path / "claims.yaml"
    path.write_text(text)
    return CliRunner().invoke(cli, ["allocate", str(path), "--node", "gpu-node-1"])


def test_twenty_five_shares_name_the_capacity_that_ran_out(tmp_path: Path) -> None:
    result = _allocate(tmp_path, _manifests(devices=3, claims=25, share="10Gi"))
    assert result.exit_code == 3, result.output
    first = result.stdout.splitlines()[0]
    assert first == (
        "cannot allocate all claims: capacity memory: 25 request(s) want at least 250Gi together, "
        "the 3 shared device(s) they can use have 240Gi free"
    )
    assert "step budget" not in result.output


def test_shares_that_fit_in_total_but_not_per_device_are_named_too(tmp_path: Path) -> None:
    result = _allocate(tmp_path, _manifests(devices=8, claims=21, share="30Gi"))
    assert result.exit_code == 3, result.output
    assert result.stdout.splitlines()[0] == (
        "cannot allocate all claims: capacity memory: 21 request(s) want 21 share(s) of at least 30Gi, "
        "the 8 shared device(s) they can use have room for 16"
    )


def test_exactly_full_devices_still_allocate(tmp_path: Path) -> None:
    for devices, claims, share in ((3, 24, "10Gi"), (8, 16, "30Gi")):
        result = _allocate(tmp_path, _manifests(devices=devices, claims=claims, share=share))
        assert result.exit_code == 0, result.output


def test_existing_shares_count_against_the_free_capacity(dra: Any) -> None:
    klass = dra.device_class("gpu", f'device.driver == "{DRIVER}"')
    slice_ = dra.slice(
        "gpus",
        DRIVER,
        "node-1",
        [{"name": "gpu-0", "allowMultipleAllocations": True, "capacity": {"memory": {"value": "80Gi"}}}],
        nodeName="node-1",
    )
    claims = [
        dra.claim(f"c{i}", [dra.request("r", "gpu", capacity={"requests": {"memory": "20Gi"}})])
        for i in range(2)
    ]
    state = dra.state(capacity={f"{DRIVER}/node-1/gpu-0": {"memory": "50Gi"}})
    outcome = dra.allocator([klass], [slice_]).allocate(dra.node("node-1"), claims, state)
    assert isinstance(outcome, NoAllocation) and outcome.steps == 0
    assert "want at least 40Gi together, the 1 shared device(s) they can use have 30Gi free" in outcome.reason


@st.composite
def instances(draw: st.DrawFn) -> tuple[list[int], list[int], list[int]]:
    """(device capacities, claims' requests, capacity already used per device), in GiB."""
    capacities = draw(st.lists(st.integers(0, 12), min_size=1, max_size=3))
    requests = draw(st.lists(st.integers(1, 6), min_size=1, max_size=5))
    used = [draw(st.integers(0, c)) for c in capacities]
    return capacities, requests, used


@settings(max_examples=examples(120))
@given(instance=instances())
def test_the_sum_only_refuses_what_the_full_search_cannot_place(dra: Any, instance: Any) -> None:
    """Sound: whenever the check refuses, an unbounded search finds no allocation either."""
    capacities, requests, used = instance
    klass = dra.device_class("gpu", f'device.driver == "{DRIVER}"')
    devices = [
        {"name": f"gpu-{i}", "allowMultipleAllocations": True, "capacity": {"memory": {"value": f"{c}Gi"}}}
        for i, c in enumerate(capacities)
    ]
    slice_ = dra.slice("gpus", DRIVER, "node-1", devices, nodeName="node-1")
    claims = [
        dra.claim(f"c{i}", [dra.request("r", "gpu", capacity={"requests": {"memory": f"{r}Gi"}})])
        for i, r in enumerate(requests)
    ]
    state: AllocatedState = dra.state(
        capacity={f"{DRIVER}/node-1/gpu-{i}": {"memory": f"{u}Gi"} for i, u in enumerate(used) if u}
    )
    checked = dra.allocator([klass], [slice_]).allocate(dra.node("node-1"), claims, state)
    with mock.patch("allot.dra.allocator.capacity_shortfall", return_value=None):
        searched = dra.allocator([klass], [slice_], step_budget=10**7).allocate(
            dra.node("node-1"), claims, state
        )
    assert isinstance(checked, Allocation) == isinstance(searched, Allocation)
    if isinstance(checked, NoAllocation) and checked.steps == 0:
        assert isinstance(searched, NoAllocation) and not searched.budget_exhausted
