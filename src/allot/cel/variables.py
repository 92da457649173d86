"""The names under which the DRA `device` variable reaches the engine.

The engine cannot declare object types without a protobuf runtime, so the
fields of `device` are declared as qualified variables; CEL's name
resolution turns `device.driver` in a selector into the variable
`device.driver`, so selectors read exactly as upstream.
"""

from __future__ import annotations

from typing import Final

__all__ = ["ATTRIBUTES", "CAPACITY", "DRIVER", "MULTI_ALLOC"]

DRIVER: Final = "device.driver"
ATTRIBUTES: Final = "device.attributes"
CAPACITY: Final = "device.capacity"
# Declared only with DRAConsumableCapacity.
MULTI_ALLOC: Final = "device.allowMultipleAllocations"
