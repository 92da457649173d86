"""Device identifiers: `driver/pool/device`.

Pool names may themselves contain slashes (they are '/'-separated DNS
subdomains), driver and device names never do; `parse_device_id` relies on
that to split the text form unambiguously.
"""

from __future__ import annotations

from collections.abc import Container
from typing import NamedTuple


class DeviceId(NamedTuple):
    """One device of one pool of one driver; what AllocatedState and results refer to."""

    driver: str
    pool: str
    device: str

    def __str__(self) -> str:
        return f"{self.driver}/{self.pool}/{self.device}"


def parse_device_id(text: str) -> DeviceId:
    """`driver/pool/device` (the pool may contain slashes); raises ValueError."""
    driver, sep, rest = text.partition("/")
    pool, sep2, device = rest.rpartition("/")
    if not sep or not sep2 or not driver or not pool or not device:
        raise ValueError(f"invalid device id {text!r}: expected driver/pool/device")
    return DeviceId(driver, pool, device)


def claim_key(namespace: str, name: str) -> str:
    """How upstream names a claim in messages (klog.KObj): `namespace/name`, or `name` without namespace."""
    return f"{namespace}/{name}" if namespace else name


class EitherFilter:
    """Two device filters (`exclude=` arguments) as one: a device is excluded if either excludes it."""

    __slots__ = ("first", "second")

    def __init__(self, first: Container[DeviceId] | None, second: Container[DeviceId]) -> None:
        self.first = first
        self.second = second

    def __contains__(self, device: object) -> bool:
        return device in self.second or (self.first is not None and device in self.first)
