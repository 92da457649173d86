"""GPU devices for sharing: fractional (consumable capacity), MIG partitions, time-slicing.

Contract (used by the node presets; implemented in this module):

* `shared_gpu_device(name, *, attributes, memory) -> Device`: one GPU with
  `allowMultipleAllocations: true` and consumable capacities `cores`
  (100, request policy validRange 0..100 step 1, as HAMi's DRA driver
  publishes it) and `memory` (the GPU's memory in bytes, validRange
  1Mi..memory step 1Mi).
* `time_sliced_device(name, *, attributes, memory, replicas) -> Device`:
  one GPU shared by up to `replicas` pods.
* `mig_devices(gpu_model, gpu_index, *, attributes) -> tuple[CounterSet,
  list[Device]]`: the counter set `gpu-<i>-counter-set` and the full GPU plus
  one device per (MIG profile, placement), from data/mig-profiles.csv, as
  NVIDIA's DRA driver models dynamic MIG.
"""

from __future__ import annotations

from collections.abc import Mapping

from allot.model.quantity import Quantity
from allot.model.resource import CounterSet, Device, DeviceAttribute


def shared_gpu_device(name: str, *, attributes: Mapping[str, DeviceAttribute], memory: Quantity) -> Device:
    raise NotImplementedError


def time_sliced_device(
    name: str, *, attributes: Mapping[str, DeviceAttribute], memory: Quantity, replicas: int
) -> Device:
    raise NotImplementedError


def mig_devices(
    gpu_model: str, gpu_index: int, *, attributes: Mapping[str, DeviceAttribute]
) -> tuple[CounterSet, list[Device]]:
    raise NotImplementedError
