"""MIG as NVIDIA's driver models dynamic MIG: placements exclude each other through counters, in the real allocator."""

from __future__ import annotations

import pytest

from allot.dra import AllocatedState, Allocation, Allocator, Features, SliceIndex
from allot.model.base import ObjectMeta
from allot.model.presets import gpu_sharing as gs
from allot.model.resource import (
    CELDeviceSelector,
    DeviceAttribute,
    DeviceClaim,
    DeviceRequest,
    DeviceSelector,
    ExactDeviceRequest,
    ResourceClaim,
    ResourceClaimSpec,
)
from allot.model.validation import validate_object
from builders import node

MODELS = {
    "A100-40GB": {"3g": "3g.20gb", "4g": "4g.20gb", "1g": "1g.5gb", "1g+me": "1g.5gb+me", "2g": "2g.10gb"},
    "A100-80GB": {"3g": "3g.40gb", "4g": "4g.40gb", "1g": "1g.10gb", "1g+me": "1g.10gb+me", "2g": "2g.20gb"},
    "H100-80GB": {"3g": "3g.40gb", "4g": "4g.40gb", "1g": "1g.10gb", "1g+me": "1g.10gb+me", "2g": "2g.20gb"},
    "H200-141GB": {"3g": "3g.71gb", "4g": "4g.71gb", "1g": "1g.18gb", "1g+me": "1g.18gb+me", "2g": "2g.35gb"},
}
ATTR = f'device.attributes["{gs.NVIDIA_DRIVER}"]'


class Gpu:
    """One MIG-capable GPU on node n1, allocated claim by claim."""

    def __init__(self, model: str) -> None:
        slices = gs.mig_slices("n1", [(model, {"productName": DeviceAttribute(string_value=model)})])
        classes = {c.name: c for c in gs.nvidia_device_classes()}
        self.allocator = Allocator(classes, SliceIndex(slices), features=Features.all())
        self.state = AllocatedState()
        self.count = 0

    def take(self, profile: str | None, start: int | None = None) -> bool:
        """Allocate a partition (or the whole GPU when `profile` is None); True if it fit."""
        if profile is None:
            request = ExactDeviceRequest(device_class_name="gpu.nvidia.com", count=1)
        else:
            expression = f'{ATTR}.profile == "{profile}"'
            if start is not None:
                expression += f" && {ATTR}.placementStart == {start}"
            request = ExactDeviceRequest(
                device_class_name="mig.nvidia.com",
                count=1,
                selectors=(DeviceSelector(cel=CELDeviceSelector(expression=expression)),),
            )
        self.count += 1
        claim = ResourceClaim(
            metadata=ObjectMeta(name=f"c{self.count}", namespace="default"),
            spec=ResourceClaimSpec(devices=DeviceClaim(requests=(DeviceRequest(name="r", exactly=request),))),
        )
        outcome = self.allocator.allocate(node("n1"), [claim], self.state)
        if isinstance(outcome, Allocation):
            self.state.add_allocation(outcome.results[0])
            return True
        return False


@pytest.mark.parametrize("model", MODELS)
def test_devices_are_named_and_counted_like_nvidias_driver(model: str) -> None:
    counter_set, devices = gs.mig_devices(model, 0, attributes={})
    assert counter_set.name == "gpu-0-counter-set"
    assert {f"memory-slice-{i}" for i in range(8)} <= set(counter_set.counters)
    assert {"multiprocessors", "decoders", "ofa-engines"} <= set(counter_set.counters)
    names = [d.name for d in devices]
    assert names[0] == "gpu-0"
    # 7 x 1g, 7 x 1g+me, 4 x 1g double memory, 3 x 2g, 2 x 3g, 1 x 4g, 1 x 7g, plus the full GPU.
    assert len(devices) == 26
    assert "gpu-0-mig-" + MODELS[model]["1g"].replace(".", "") + "-19-0" in names
    for slice_ in gs.mig_slices("n1", [(model, {})] * 8):
        assert validate_object(slice_, None) == []  # type: ignore[arg-type]


@pytest.mark.parametrize("model", MODELS)
def test_overlapping_placements_conflict(model: str) -> None:
    gpu = Gpu(model)
    p = MODELS[model]
    assert gpu.take(p["3g"], 0)
    assert not gpu.take(p["4g"], 0)  # memory slices 0-3 are taken
    assert gpu.take(p["3g"], 4)  # 0-3 and 4-7: two 3g fill the memory
    assert not gpu.take(p["1g"])


@pytest.mark.parametrize("model", MODELS)
def test_4g_at_0_and_3g_at_4_fit_together(model: str) -> None:
    gpu = Gpu(model)
    p = MODELS[model]
    assert gpu.take(p["4g"], 0)
    assert gpu.take(p["3g"], 4)
    assert not gpu.take(p["1g"])  # all 7 compute slices in use


@pytest.mark.parametrize("model", MODELS)
def test_full_gpu_excludes_every_partition(model: str) -> None:
    gpu = Gpu(model)
    assert gpu.take(None)
    for profile in gs.mig_profiles()[model]:
        for start in profile.placements:
            assert not gpu.take(profile.profile, start), (profile.profile, start)


@pytest.mark.parametrize("model", MODELS)
def test_any_partition_excludes_the_full_gpu(model: str) -> None:
    gpu = Gpu(model)
    assert gpu.take(MODELS[model]["1g"], 6)
    assert not gpu.take(None)


@pytest.mark.parametrize("model", MODELS)
def test_seven_1g_fit_and_media_extensions_are_unique(model: str) -> None:
    p = MODELS[model]
    gpu = Gpu(model)
    assert all(gpu.take(p["1g"], start) for start in range(7))
    assert not gpu.take(p["1g"])
    other = Gpu(model)
    assert other.take(p["1g+me"], 0)
    assert not other.take(p["1g+me"], 1)  # the one optical-flow engine is taken
    assert other.take(p["2g"], 2) and other.take(p["2g"], 4)


def test_unknown_model_is_refused_with_the_known_ones() -> None:
    with pytest.raises(ValueError, match="A100-40GB"):
        gs.mig_devices("B200", 0, attributes={})
