"""Expanding a preset into objects: from code, from a scenario-file spec, from the CLI.

From code::

    objects = expand_preset("dgx-h100", nodes=4, racks=2, gpu_mode="whole")

From a scenario file, one mapping per group of identical machines (camelCase
keys, as in manifests), expanded with `expand_spec` / `expand_specs`::

    preset: dgx-h100          # required; see `preset_names()`
    nodes: 4                  # default 1
    namePrefix: dgx           # default: the preset name; nodes are <prefix>-<index>
    startIndex: 0             # first index
    labels: {team: a}         # added to every node
    racks: 2                  # or a list of rack names; nodes are split evenly, in order
    blocks: 1                 # or a list of block names; racks are split evenly, in order
    rackLabel: cloud.provider.com/topology-rack    # defaults shown
    blockLabel: cloud.provider.com/topology-block
    gpuMode: whole            # whole | shared | mig | time-sliced
    timeSlicingReplicas: 4    # pods per GPU in time-sliced mode
    gpuTaint: false           # taint nodes nvidia.com/gpu=present:NoSchedule
    taints: []                # further taints, as in a Node spec
    deviceClasses: true       # include the drivers' DeviceClasses
    topology: gpu-topology    # also emit a Kueue Topology (block > rack > hostname) of this name

The result is a list of model records (DeviceClasses, then per node its Node
and ResourceSlices, then the Topology) that loads back through
`allot.model.loader` unchanged. Bad specs raise `PresetError` naming the
field (`presets[1].nodes: expected a positive integer, got 'x'`).

Bounds, so that no spec can ask for more than a machine holds: at most
`MAX_NODES` nodes per call, `MAX_INDEX` as the last node index, at most as
many racks as nodes and blocks as racks, `MAX_REPLICAS` time-slicing
replicas, and a name prefix that makes valid node names (a DNS label).
"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping, Sequence
from typing import Any

from allot.model.base import Object
from allot.model.core import Taint
from allot.model.presets.catalog import SHAPES, NodeShape, PresetError
from allot.model.presets.classes import device_classes, topology
from allot.model.presets.gpu_sharing import hami_device_class
from allot.model.presets.nodes import BLOCK_LABEL, GPU_TAINT, HOSTNAME_LABEL, RACK_LABEL, preset_node
from allot.model.presets.slices import GPU_MODES, node_slices

TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
MAX_NODES = 10_000
MAX_INDEX = 10**9
MAX_REPLICAS = 1024
_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_SPEC_KEYS = (
    "preset",
    "nodes",
    "namePrefix",
    "startIndex",
    "labels",
    "racks",
    "blocks",
    "rackLabel",
    "blockLabel",
    "gpuMode",
    "timeSlicingReplicas",
    "gpuTaint",
    "taints",
    "deviceClasses",
    "topology",
)


def preset_names() -> list[str]:
    return sorted(SHAPES)


def shape(name: str) -> NodeShape:
    found = SHAPES.get(name)
    if found is None:
        raise PresetError(f"preset: unknown preset {name!r}; known: {', '.join(preset_names())}")
    return found


def domain_names(prefix: str, count: int) -> list[str]:
    """`rack-a`, `rack-b`, ... `rack-z`, `rack-aa`, ... (in sorting order)."""
    letters = string.ascii_lowercase
    width = 1
    while len(letters) ** width < count:
        width += 1
    names = []
    for index in range(count):
        digits = []
        for _ in range(width):
            index, digit = divmod(index, len(letters))
            digits.append(letters[digit])
        names.append(f"{prefix}-{''.join(reversed(digits))}")
    return names


def _spread(items: int, groups: Sequence[str]) -> list[str]:
    """Item i goes to group i * len(groups) // items: contiguous, as even as possible."""
    return [groups[i * len(groups) // items] for i in range(items)] if groups else []


def expand_preset(
    name: str,
    nodes: int = 1,
    *,
    name_prefix: str | None = None,
    start: int = 0,
    labels: Mapping[str, str] | None = None,
    racks: int | Sequence[str] = 0,
    blocks: int | Sequence[str] = 0,
    rack_label: str = RACK_LABEL,
    block_label: str = BLOCK_LABEL,
    gpu_mode: str = "whole",
    replicas: int = 4,
    gpu_taint: bool = False,
    taints: Sequence[Taint] = (),
    classes: bool = True,
    topology_name: str | None = None,
) -> list[Object]:
    """`nodes` machines of preset `name` with their ResourceSlices (see the module docstring)."""
    machine = shape(name)
    if not 1 <= nodes <= MAX_NODES:
        raise PresetError(f"nodes: expected a positive integer of at most {MAX_NODES:,}, got {nodes}")
    if not 0 <= start <= MAX_INDEX - nodes:
        raise PresetError(f"startIndex: expected an integer from 0 to {MAX_INDEX - nodes:,}, got {start}")
    if gpu_mode not in GPU_MODES:
        raise PresetError(f"gpuMode: expected one of {', '.join(GPU_MODES)}, got {gpu_mode!r}")
    if not 1 <= replicas <= MAX_REPLICAS:
        raise PresetError(
            f"timeSlicingReplicas: expected an integer from 1 to {MAX_REPLICAS}, got {replicas}"
        )
    for key, domains, most in (
        ("racks", racks, nodes),
        ("blocks", blocks, racks if isinstance(racks, int) else len(racks)),
    ):
        count = domains if isinstance(domains, int) else len(domains)
        if not 0 <= count <= most:
            raise PresetError(
                f"{key}: expected at most {most} (one per {'node' if key == 'racks' else 'rack'}), got {count}"
            )
    prefix = name_prefix or name
    if len(prefix) > 50 or not _DNS_LABEL.fullmatch(prefix):
        raise PresetError(
            f"namePrefix: expected a DNS label of at most 50 characters (lower-case letters, digits, '-'), got {prefix!r}"
        )
    rack_names = domain_names("rack", racks) if isinstance(racks, int) else list(racks)
    block_names = domain_names("block", blocks) if isinstance(blocks, int) else list(blocks)
    if block_names and not rack_names:
        raise PresetError("blocks: blocks group racks; set racks too")
    node_racks = _spread(nodes, rack_names)
    rack_blocks = dict(zip(rack_names, _spread(len(rack_names), block_names), strict=False))
    all_taints = (GPU_TAINT, *taints) if gpu_taint else tuple(taints)
    width = max(2, len(str(start + nodes - 1)))
    objects: list[Object] = list(device_classes()) if classes else []
    if classes and gpu_mode == "shared":
        objects.append(hami_device_class())
    for offset in range(nodes):
        node_name = f"{prefix}-{start + offset:0{width}d}"
        node_labels = dict(labels or {})
        if node_racks:
            rack = node_racks[offset]
            node_labels[rack_label] = rack
            if rack in rack_blocks:
                node_labels[block_label] = rack_blocks[rack]
        objects.append(preset_node(machine, node_name, labels=node_labels, taints=all_taints))
        objects.extend(node_slices(machine, node_name, gpu_mode=gpu_mode, replicas=replicas))
    if topology_name:
        levels = [block_label] if block_names else []
        levels += [rack_label] if rack_names else []
        objects.append(topology(topology_name, [*levels, HOSTNAME_LABEL]))
    return objects


# -- scenario-file specs ---------------------------------------------------------------------


def _positive(spec: Mapping[str, Any], key: str, default: int, where: str, *, zero: bool = False) -> int:
    value = spec.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool) or value < (0 if zero else 1):
        kind = "a non-negative" if zero else "a positive"
        raise PresetError(f"{where}.{key}: expected {kind} integer, got {value!r}")
    return value


def _string(spec: Mapping[str, Any], key: str, default: str | None, where: str) -> str | None:
    value = spec.get(key, default)
    if value is not None and (not isinstance(value, str) or not value):
        raise PresetError(f"{where}.{key}: expected a non-empty string, got {value!r}")
    return value


def _bool(spec: Mapping[str, Any], key: str, default: bool, where: str) -> bool:
    value = spec.get(key, default)
    if not isinstance(value, bool):
        raise PresetError(f"{where}.{key}: expected true or false, got {value!r}")
    return value


def _domains(spec: Mapping[str, Any], key: str, where: str) -> int | list[str]:
    value = spec.get(key, 0)
    if isinstance(value, list):
        if not value or not all(isinstance(v, str) and v for v in value):
            raise PresetError(f"{where}.{key}: expected a count or a non-empty list of names")
        return list(value)
    return _positive(spec, key, 0, where, zero=True)


def _labels(spec: Mapping[str, Any], where: str) -> dict[str, str]:
    value = spec.get("labels") or {}
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise PresetError(f"{where}.labels: expected a mapping of strings to strings")
    return dict(value)


def _taints(spec: Mapping[str, Any], where: str) -> list[Taint]:
    value = spec.get("taints") or []
    if not isinstance(value, list):
        raise PresetError(f"{where}.taints: expected a list of {{key, value, effect}}")
    taints = []
    for i, raw in enumerate(value):
        at = f"{where}.taints[{i}]"
        if not isinstance(raw, dict) or not isinstance(raw.get("key"), str) or not raw["key"]:
            raise PresetError(f"{at}.key: expected a non-empty string")
        effect = raw.get("effect")
        if effect not in TAINT_EFFECTS:
            raise PresetError(f"{at}.effect: expected one of {', '.join(TAINT_EFFECTS)}, got {effect!r}")
        taint_value = raw.get("value", "")
        if not isinstance(taint_value, str):
            raise PresetError(f"{at}.value: expected a string")
        taints.append(Taint(key=raw["key"], value=taint_value, effect=effect))
    return taints


def expand_spec(spec: Mapping[str, Any], *, where: str = "preset") -> list[Object]:
    """One scenario-file preset entry (see the module docstring) as objects; raises PresetError."""
    if not isinstance(spec, Mapping):
        raise PresetError(f"{where}: expected a mapping with at least `preset`")
    unknown = sorted(set(spec) - set(_SPEC_KEYS))
    if unknown:
        raise PresetError(f"{where}.{unknown[0]}: unknown field; expected one of {', '.join(_SPEC_KEYS)}")
    name = spec.get("preset")
    if not isinstance(name, str):
        raise PresetError(f"{where}.preset: required: one of {', '.join(preset_names())}")
    try:
        return expand_preset(
            name,
            _positive(spec, "nodes", 1, where),
            name_prefix=_string(spec, "namePrefix", None, where),
            start=_positive(spec, "startIndex", 0, where, zero=True),
            labels=_labels(spec, where),
            racks=_domains(spec, "racks", where),
            blocks=_domains(spec, "blocks", where),
            rack_label=_string(spec, "rackLabel", RACK_LABEL, where) or RACK_LABEL,
            block_label=_string(spec, "blockLabel", BLOCK_LABEL, where) or BLOCK_LABEL,
            gpu_mode=_string(spec, "gpuMode", "whole", where) or "whole",
            replicas=_positive(spec, "timeSlicingReplicas", 4, where),
            gpu_taint=_bool(spec, "gpuTaint", False, where),
            taints=_taints(spec, where),
            classes=_bool(spec, "deviceClasses", True, where),
            topology_name=_string(spec, "topology", None, where),
        )
    except PresetError as err:
        message = str(err)
        raise PresetError(message if message.startswith(where) else f"{where}.{message}") from None


def expand_specs(specs: Sequence[Mapping[str, Any]], *, where: str = "presets") -> list[Object]:
    """Several entries; cluster-wide objects (DeviceClasses, Topologies) appear once, first one wins."""
    if not isinstance(specs, Sequence) or isinstance(specs, str):
        raise PresetError(f"{where}: expected a list of preset entries")
    objects: list[Object] = []
    seen: dict[tuple[str, str], int] = {}
    for i, spec in enumerate(specs):
        for obj in expand_spec(spec, where=f"{where}[{i}]"):
            identity = (type(obj).KIND, obj.name)
            if identity in seen:
                if identity[0] == "Node":
                    raise PresetError(
                        f"{where}[{i}]: node {obj.name} is also made by {where}[{seen[identity]}]; "
                        "set namePrefix or startIndex"
                    )
                continue
            seen[identity] = i
            objects.append(obj)
    return objects
