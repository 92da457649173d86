"""Hardware presets expand into objects that load back, validate, and describe the machines faithfully."""

from __future__ import annotations

from collections import Counter

import pytest

from allot.cel.validate import check_selectors
from allot.model.codec import dump_json, dump_yaml
from allot.model.core import Node
from allot.model.kueue import Topology
from allot.model.loader import load_text
from allot.model.presets.catalog import SHAPES, PresetError
from allot.model.presets.expand import domain_names, expand_preset, expand_spec, expand_specs, preset_names
from allot.model.resource import DeviceClass, ResourceSlice

PCIE_ROOT = "resource.kubernetes.io/pcieRoot"
NUMA_NODE = "resource.kubernetes.io/numaNode"


def slices(objects: list[object], driver: str) -> list[ResourceSlice]:
    return [o for o in objects if isinstance(o, ResourceSlice) and o.spec.driver == driver]


def attribute(device: object, name: str) -> object:
    value = device.attributes[name]  # type: ignore[attr-defined]
    return value.value


def round_trip(objects: list[object]) -> None:
    for text in (dump_yaml(objects), dump_json(objects)):  # type: ignore[arg-type]
        manifests = load_text(text)
        assert manifests.objects == objects
        assert check_selectors(manifests) == []


@pytest.mark.parametrize("name", preset_names())
def test_every_preset_round_trips_and_validates(name: str) -> None:
    objects = expand_preset(name, 3, racks=2, blocks=1, gpu_taint=True, topology_name="gpu-topology")
    round_trip(objects)  # type: ignore[arg-type]
    nodes = [o for o in objects if isinstance(o, Node)]
    assert [n.name for n in nodes] == [f"{name}-00", f"{name}-01", f"{name}-02"]
    assert {type(o).KIND for o in objects} >= {"DeviceClass", "Node", "ResourceSlice", "Topology"}


@pytest.mark.parametrize(
    ("name", "mode"), [("dgx-h100", "mig"), ("p4d-24xlarge", "mig"), ("dgx-h200", "time-sliced")]
)
def test_sharing_modes_round_trip(name: str, mode: str) -> None:
    round_trip(expand_preset(name, 1, gpu_mode=mode))  # type: ignore[arg-type]


def test_shared_mode_publishes_hami_gpus_and_class() -> None:
    objects = expand_preset("dgx-h100", 1, gpu_mode="shared")
    round_trip(objects)  # type: ignore[arg-type]
    (hami,) = slices(objects, "hami-core-gpu.project-hami.io")
    assert attribute(hami.spec.devices[0], "type") == "hami-gpu"
    assert attribute(hami.spec.devices[0], PCIE_ROOT) == "pci0000:15"
    assert "hami-core-gpu.project-hami.io" in {o.name for o in objects if isinstance(o, DeviceClass)}


def test_mig_mode_publishes_counter_slice_and_one_slice_per_gpu() -> None:
    gpu_slices = slices(expand_preset("dgx-h100", 1, gpu_mode="mig"), "gpu.nvidia.com")
    assert len(gpu_slices) == 9
    assert {s.spec.pool.resource_slice_count for s in gpu_slices} == {9}
    assert len(gpu_slices[0].spec.shared_counters) == 8
    assert all(len(s.spec.devices) <= 64 for s in gpu_slices)


def test_l40s_has_no_mig() -> None:
    with pytest.raises(PresetError, match="does not support MIG"):
        expand_preset("pcie-l40s", 1, gpu_mode="mig")


def test_dgx_h100_pairs_each_gpu_with_one_compute_nic() -> None:
    objects = expand_preset("dgx-h100", 1)
    (gpus,) = slices(objects, "gpu.nvidia.com")
    (nics,) = slices(objects, "dra.net")
    (cpus,) = slices(objects, "dra.cpu")
    assert [d.name for d in gpus.spec.devices] == [f"gpu-{i}" for i in range(8)]
    assert attribute(gpus.spec.devices[0], "productName") == "NVIDIA H100 80GB HBM3"
    assert attribute(gpus.spec.devices[0], "resource.kubernetes.io/pciBusID") == "0000:1b:00.0"
    compute = {
        attribute(d, PCIE_ROOT): d
        for d in nics.spec.devices
        if str(attribute(d, "dra.net/ifName")).startswith("ibp")
    }
    assert len(compute) == 8 and len(nics.spec.devices) == 12
    table = []
    for gpu in gpus.spec.devices:
        nic = compute[attribute(gpu, PCIE_ROOT)]
        assert attribute(nic, NUMA_NODE) == attribute(gpu, NUMA_NODE)
        table.append((gpu.name, attribute(nic, "dra.net/rdmaDevice"), attribute(nic, "dra.net/ifName")))
    # DGX H100 user guide, table 6.
    assert table == [
        ("gpu-0", "mlx5_0", "ibp24s0"),
        ("gpu-1", "mlx5_3", "ibp64s0"),
        ("gpu-2", "mlx5_4", "ibp79s0"),
        ("gpu-3", "mlx5_5", "ibp94s0"),
        ("gpu-4", "mlx5_6", "ibp154s0"),
        ("gpu-5", "mlx5_9", "ibp192s0"),
        ("gpu-6", "mlx5_10", "ibp206s0"),
        ("gpu-7", "mlx5_11", "ibp220s0"),
    ]
    assert Counter(attribute(g, NUMA_NODE) for g in gpus.spec.devices) == {0: 4, 1: 4}
    storage_roots = {attribute(d, PCIE_ROOT) for d in nics.spec.devices} - set(compute)
    assert len(storage_roots) == 2
    assert [
        (d.name, attribute(d, NUMA_NODE), d.capacity["dra.cpu/cpu"].value) for d in cpus.spec.devices
    ] == [
        ("cpudevnuma000", 0, 112),
        ("cpudevnuma001", 1, 112),
    ]
    assert all(d.allow_multiple_allocations for d in cpus.spec.devices)


def test_p4d_has_two_gpus_and_one_efa_per_root() -> None:
    objects = expand_preset("p4d-24xlarge", 1)
    (gpus,) = slices(objects, "gpu.nvidia.com")
    (nics,) = slices(objects, "dra.net")
    roots = Counter(attribute(d, PCIE_ROOT) for d in gpus.spec.devices)
    assert roots == {"pci0000:10": 2, "pci0000:20": 2, "pci0000:90": 2, "pci0000:a0": 2}
    assert Counter(attribute(d, PCIE_ROOT) for d in nics.spec.devices) == dict.fromkeys(roots, 1)
    efa = nics.spec.devices[0]
    assert efa.name == "pci-0000-10-1b-0" and attribute(efa, "dra.net/rdmaDevice") == "rdmap16s27"
    assert "dra.net/ifName" not in efa.attributes  # RDMA-only function


def test_l40s_gpus_and_nics_share_no_root() -> None:
    objects = expand_preset("pcie-l40s", 1)
    gpu_roots = {attribute(d, PCIE_ROOT) for s in slices(objects, "gpu.nvidia.com") for d in s.spec.devices}
    nic_roots = {attribute(d, PCIE_ROOT) for s in slices(objects, "dra.net") for d in s.spec.devices}
    assert len(gpu_roots) == 4 and not gpu_roots & nic_roots


def test_node_fields() -> None:
    node = next(
        o for o in expand_preset("dgx-h200", 1, labels={"team": "a"}, gpu_taint=True) if isinstance(o, Node)
    )
    labels = node.metadata.labels
    assert labels["kubernetes.io/hostname"] == node.name
    assert labels["node.kubernetes.io/instance-type"] == "dgx-h200"
    assert labels["nvidia.com/gpu.product"] == "NVIDIA-H200" and labels["team"] == "a"
    assert str(node.status.capacity["cpu"]) == "224" and str(node.status.allocatable["cpu"]) == "222"
    assert [(t.key, t.effect) for t in node.spec.taints] == [("nvidia.com/gpu", "NoSchedule")]


def test_racks_and_blocks_split_nodes_in_order() -> None:
    objects = expand_preset("dgx-h100", 6, racks=3, blocks=2, topology_name="t", classes=False)
    nodes = [o for o in objects if isinstance(o, Node)]
    racks = [n.metadata.labels["cloud.provider.com/topology-rack"] for n in nodes]
    blocks = [n.metadata.labels["cloud.provider.com/topology-block"] for n in nodes]
    assert racks == ["rack-a", "rack-a", "rack-b", "rack-b", "rack-c", "rack-c"]
    assert blocks == ["block-a"] * 4 + ["block-b"] * 2
    (topology,) = [o for o in objects if isinstance(o, Topology)]
    assert [level.node_label for level in topology.spec.levels] == [
        "cloud.provider.com/topology-block",
        "cloud.provider.com/topology-rack",
        "kubernetes.io/hostname",
    ]
    assert not [o for o in objects if isinstance(o, DeviceClass)]
    many = domain_names("rack", 28)
    assert many[:2] == ["rack-aa", "rack-ab"] and many[-1] == "rack-bb" and many == sorted(many)


def test_spec_expands_like_the_function() -> None:
    spec = {
        "preset": "p4d-24xlarge",
        "nodes": 2,
        "namePrefix": "p4d",
        "racks": ["r1", "r2"],
        "gpuTaint": True,
    }
    objects = expand_spec(spec)
    nodes = [o for o in objects if isinstance(o, Node)]
    assert [n.name for n in nodes] == ["p4d-00", "p4d-01"]
    assert [n.metadata.labels["cloud.provider.com/topology-rack"] for n in nodes] == ["r1", "r2"]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"nodes": 1}, "presets[0].preset: required"),
        ({"preset": "dgx-h100", "nodes": 0}, "presets[0].nodes: expected a positive integer, got 0"),
        ({"preset": "dgx-h100", "gpuMode": "half"}, "presets[0].gpuMode: expected one of whole, shared"),
        ({"preset": "nope"}, "presets[0].preset: unknown preset 'nope'"),
        ({"preset": "dgx-h100", "colour": 1}, "presets[0].colour: unknown field"),
        ({"preset": "dgx-h100", "taints": [{"key": "k", "effect": "Bad"}]}, "presets[0].taints[0].effect"),
        ({"preset": "dgx-h100", "labels": {"a": 1}}, "presets[0].labels: expected a mapping of strings"),
    ],
)
def test_bad_specs_name_the_field(spec: dict[str, object], message: str) -> None:
    with pytest.raises(PresetError) as failure:
        expand_specs([spec])
    assert str(failure.value).startswith(message)


def test_specs_share_cluster_objects_and_reject_duplicate_nodes() -> None:
    objects = expand_specs([{"preset": "dgx-h100"}, {"preset": "dgx-h200"}])
    assert Counter(type(o).KIND for o in objects)["DeviceClass"] == 4
    round_trip(objects)  # type: ignore[arg-type]
    with pytest.raises(PresetError, match=r"presets\[1\]: node dgx-h100-00 is also made by presets\[0\]"):
        expand_specs([{"preset": "dgx-h100"}, {"preset": "dgx-h100"}])


def test_catalog_describes_every_preset() -> None:
    for shape in SHAPES.values():
        assert len({g.pci_bus_id for g in shape.gpus}) == len(shape.gpus)
        assert shape.cpus == sum(s.cpus for s in shape.sockets)
