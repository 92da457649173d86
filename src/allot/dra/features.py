"""Which optional DRA features the allocator honours.

Kubernetes gates every allocator feature beyond the GA core behind a feature
gate; the upstream allocator picks one of three implementations (stable,
incubating, experimental) by the set that is enabled. allot has a single
implementation that reads these flags. `Features.all()` is allot's default:
everything on, i.e. the experimental variant of Kubernetes 1.35.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, fields

# Upstream's names (as used by the conformance fixtures) -> our field names.
_UPSTREAM_NAMES: dict[str, str] = {
    "AdminAccess": "admin_access",
    "PrioritizedList": "prioritized_list",
    "PartitionableDevices": "partitionable_devices",
    "DeviceTaints": "device_taints",
    "ConsumableCapacity": "consumable_capacity",
    "DeviceBindingAndStatus": "device_binding",
}


@dataclass(frozen=True, slots=True)
class Features:
    """The allocator features that are enabled; all on by default."""

    admin_access: bool = True
    prioritized_list: bool = True
    partitionable_devices: bool = True
    device_taints: bool = True
    consumable_capacity: bool = True
    device_binding: bool = True

    @classmethod
    def all(cls) -> Features:
        return cls()

    @classmethod
    def none(cls) -> Features:
        return cls(**{f.name: False for f in fields(cls)})

    @classmethod
    def from_names(cls, names: Iterable[str]) -> Features:
        """Exactly the named features (upstream spelling, e.g. "AdminAccess"); raises ValueError."""
        enabled: dict[str, bool] = {f.name: False for f in fields(cls)}
        for name in names:
            field = _UPSTREAM_NAMES.get(name)
            if field is None:
                known = ", ".join(_UPSTREAM_NAMES)
                raise ValueError(f"unknown DRA feature {name!r}; expected one of {known}")
            enabled[field] = True
        return cls(**enabled)

    def names(self) -> tuple[str, ...]:
        """The enabled features in upstream spelling."""
        return tuple(name for name, field in _UPSTREAM_NAMES.items() if getattr(self, field))

    @property
    def experimental(self) -> bool:
        """Whether upstream would run its experimental variant (some alpha-only behaviour depends on it)."""
        return self.consumable_capacity or self.device_binding
