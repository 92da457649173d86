"""Claim constraints: matchAttribute and distinctAttribute, incremental with undo.

Both constraints are checked as devices are picked (`add`) and forgotten on
backtracking (`remove`), in O(1) for matchAttribute and O(1) amortised for
distinctAttribute. A constraint applies to a device picked for request R
(sub-request S) if its request list is empty, names R, or names `R/S`.

Attribute lookup uses fully qualified names: `<driver>/numa` finds a device's
unqualified `numa` attribute when the device belongs to `<driver>`.

* matchAttribute: the first device in scope fixes the value (any type, even
  an unset one); later devices must have the attribute with the same type
  and value. Missing attribute -> refused.
* distinctAttribute: devices in scope must have the attribute and pairwise
  different values. Upstream 1.35 remembers one value per *request name*, so
  with count >= 3 a third device may repeat the first one's value; allot keeps
  a multiset of the values of all picked devices, which is what the API
  documents.
"""

from __future__ import annotations

from collections import Counter

from allot.dra.devices import UNKNOWN_KIND, AttrValue, DeviceInfo


class Constraint:
    """Common scope handling; subclasses implement `_add` / `_remove` for devices in scope."""

    __slots__ = ("attribute", "index", "requests")

    kind = ""

    def __init__(self, index: int, requests: tuple[str, ...], attribute: str) -> None:
        self.index = index
        self.requests = frozenset(requests)
        self.attribute = attribute

    def applies(self, request: str, full_name: str) -> bool:
        """`request` is the top-level request name, `full_name` `req` or `req/sub`."""
        requests = self.requests
        return not requests or request in requests or full_name in requests

    def add(self, request: str, full_name: str, device: DeviceInfo) -> bool:
        if not self.applies(request, full_name):
            return True
        return self._add(device)

    def remove(self, request: str, full_name: str, device: DeviceInfo) -> None:
        if self.applies(request, full_name):
            self._remove(device)

    def _add(self, device: DeviceInfo) -> bool:
        raise NotImplementedError

    def _remove(self, device: DeviceInfo) -> None:
        raise NotImplementedError

    def describe(self) -> str:
        return f"{self.kind} {self.attribute}"


class MatchAttribute(Constraint):
    __slots__ = ("count", "value")

    kind = "matchAttribute"

    def __init__(self, index: int, requests: tuple[str, ...], attribute: str) -> None:
        super().__init__(index, requests, attribute)
        self.value: AttrValue | None = None
        self.count = 0

    def _add(self, device: DeviceInfo) -> bool:
        value = device.attributes.get(self.attribute)
        if value is None:
            return False
        if self.count == 0:
            self.value = value
            self.count = 1
            return True
        # Typed equality; an unset value never equals anything.
        if value[0] == UNKNOWN_KIND or value != self.value:
            return False
        self.count += 1
        return True

    def _remove(self, device: DeviceInfo) -> None:
        self.count -= 1


class DistinctAttribute(Constraint):
    __slots__ = ("values",)

    kind = "distinctAttribute"

    def __init__(self, index: int, requests: tuple[str, ...], attribute: str) -> None:
        super().__init__(index, requests, attribute)
        self.values: Counter[AttrValue] = Counter()

    def _add(self, device: DeviceInfo) -> bool:
        value = device.attributes.get(self.attribute)
        if value is None or value[0] == UNKNOWN_KIND or self.values[value] > 0:
            return False
        self.values[value] += 1
        return True

    def _remove(self, device: DeviceInfo) -> None:
        value = device.attributes[self.attribute]
        self.values[value] -= 1
