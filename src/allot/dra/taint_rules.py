"""DeviceTaintRules applied to ResourceSlices before allocation.

The scheduler lists slices "with device taint rules": every rule whose
selector (driver, pool, device; unset fields match anything) covers a device
appends the rule's taint to that device, as if the driver had published it.
Rules are applied in name order so the resulting taint lists are
deterministic. Slices without a matching device are returned unchanged (the
same object), which keeps identity-based caches warm.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from msgspec.structs import replace

from allot.model.resource import Device, DeviceTaintRule, ResourceSlice


def _selects(rule: DeviceTaintRule, driver: str, pool: str, device: str) -> bool:
    selector = rule.spec.device_selector
    if selector is None:
        return True
    return (
        (selector.driver is None or selector.driver == driver)
        and (selector.pool is None or selector.pool == pool)
        and (selector.device is None or selector.device == device)
    )


def apply_taint_rules(
    slices: Sequence[ResourceSlice], rules: Iterable[DeviceTaintRule]
) -> list[ResourceSlice]:
    """The slices with every matching rule's taint appended to each covered device."""
    ordered = sorted(rules, key=lambda r: r.metadata.name)
    if not ordered:
        return list(slices)
    result: list[ResourceSlice] = []
    for slice_ in slices:
        spec = slice_.spec
        changed = False
        devices: list[Device] = []
        for device in spec.devices:
            extra = tuple(
                r.spec.taint for r in ordered if _selects(r, spec.driver, spec.pool.name, device.name)
            )
            if extra:
                changed = True
                device = replace(device, taints=device.taints + extra)
            devices.append(device)
        result.append(replace(slice_, spec=replace(spec, devices=tuple(devices))) if changed else slice_)
    return result
