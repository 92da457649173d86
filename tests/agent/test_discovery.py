"""Discovery details a real node brings: VMs without a PCIe root or NUMA node, SR-IOV virtual
functions, the node's own network, NVML's spelling of bus ids and versions, unknown PCI ids."""

from __future__ import annotations

from pathlib import Path

from agent.machines import build_sysfs, net_interface, pci_function, rdma_device, recorded
from allot.agent import pci_names
from allot.agent.inventory import GpuInventory, HostInventory
from allot.agent.node import AgentConfig, cuda_version, join, mig_model_for, normalise_bus_id, semver
from allot.agent.slices import build_pools
from allot.agent.sysfs import parse_cpulist, read_host
from allot.model.presets.catalog import SHAPES


def test_cpu_lists_bus_ids_and_versions_are_read_as_the_kernel_and_nvml_write_them() -> None:
    assert parse_cpulist("0-3,8,10-11\n") == (0, 1, 2, 3, 8, 10, 11)
    assert normalise_bus_id("00000000:1B:00.0") == "0000:1b:00.0"
    assert normalise_bus_id("0001:C3:00.1") == "0001:c3:00.1"
    assert semver("535.104.05") == "535.104.5" and semver("550.54") == "550.54.0"
    assert cuda_version(12080) == "12.8.0" and cuda_version(13000) == "13.0.0"


def test_mig_models_are_recognised_by_family_and_memory() -> None:
    assert mig_model_for("NVIDIA H100 80GB HBM3", 81559 * 2**20) == "H100-80GB"
    assert mig_model_for("NVIDIA A100-SXM4-80GB", 81920 * 2**20) == "A100-80GB"
    assert mig_model_for("NVIDIA H200", 143771 * 2**20) == "H200-141GB"
    assert mig_model_for("NVIDIA H100 NVL", 95830 * 2**20) is None  # not in the table: no MIG offered


def test_a_vm_without_root_complex_or_numa_publishes_neither_attribute(tmp_path: Path) -> None:
    root = tmp_path / "sys"
    # Hyper-V style: the function hangs under a VMBus device, not a pci<domain>:<bus> root complex.
    folder = root / "devices" / "LNXSYSTM:00" / "VMBUS:00" / "0001:00:02.0"
    for name, value in (
        ("vendor", "0x15b3"),
        ("device", "0x101d"),
        ("class", "0x020000"),
        ("numa_node", "-1"),
    ):
        folder.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(value + "\n")
    (root / "bus" / "pci" / "devices").mkdir(parents=True)
    (root / "bus" / "pci" / "devices" / "0001:00:02.0").symlink_to(
        "../../../devices/LNXSYSTM:00/VMBUS:00/0001:00:02.0"
    )
    net_interface(root, "eth1", folder, "00:22:48:00:00:01", 1500)
    rdma_device(root, "mlx5_0", folder)
    devices = join("vm", GpuInventory(), read_host(root))
    (nic,) = build_pools(devices)["dra.net"][0].spec.devices
    assert "resource.kubernetes.io/pcieRoot" not in nic.attributes
    assert (
        "resource.kubernetes.io/numaNode" not in nic.attributes and "dra.net/numaNode" not in nic.attributes
    )
    assert nic.attributes["dra.net/pciDevice"].value == "MT2892 Family [ConnectX-6 Dx]"


def test_the_nics_published_rdma_by_default_all_on_request_never_vfs_or_excluded(tmp_path: Path) -> None:
    root = build_sysfs(tmp_path / "sys", SHAPES["pcie-l40s"], "n-00")
    vf = pci_function(root, "0000:17:00.2", "pci0000:16", 0, "0x15b3", "0x101e", "0x020000")
    (vf / "physfn").symlink_to("../0000:17:00.0")
    net_interface(root, "ens1f0v0", vf, "02:00:00:00:00:02", 9000)
    rdma_device(root, "mlx5_2", vf)
    host = read_host(root)

    def names(config: AgentConfig) -> list[str | None]:
        return [n.slot.if_name for n in join("n-00", GpuInventory(), host, config).nics]

    assert names(AgentConfig()) == ["ens1f0np0", "ens5f0np0"]
    assert names(AgentConfig(nics="all")) == ["eno1", "ens1f0np0", "ens5f0np0"]
    assert names(AgentConfig(nics="all", exclude_nics=("eno*", "mlx5_1"))) == ["ens1f0np0"]


def test_a_link_down_is_read_from_operstate_or_the_rdma_port(tmp_path: Path) -> None:
    root = build_sysfs(tmp_path / "sys", SHAPES["p4d-24xlarge"], "n-00")  # EFA: RDMA only, no netdev
    (root / "class" / "infiniband" / "rdmap32s27" / "ports" / "1" / "state").write_text("1: DOWN\n")
    links = {n.rdma_device: n.link_up for n in join("n-00", GpuInventory(), read_host(root)).nics}
    assert links == {"rdmap16s27": True, "rdmap32s27": False, "rdmap144s27": True, "rdmap160s27": True}


def test_a_gpu_missing_from_sysfs_is_said_and_published_without_topology(tmp_path: Path) -> None:
    devices = join("n-00", recorded("pcie-l40s.yaml"), HostInventory())
    assert len(devices.problems) == 4 and "PCI function 0000:4a:00.0 not in sysfs" in devices.problems[0]
    gpu = build_pools(devices)["gpu.nvidia.com"][0].spec.devices[0]
    assert gpu.attributes["resource.kubernetes.io/pciBusID"].value == "0000:4a:00.0"
    assert "resource.kubernetes.io/pcieRoot" not in gpu.attributes


def test_pci_names_come_from_pci_ids_when_allot_does_not_know_them(tmp_path: Path) -> None:
    database = tmp_path / "pci.ids"
    database.write_text(
        "# comment\n1234  Example Networks\n\tabcd  Widget 100G\n\t\t1234 0001  sub\nC 02  Network\n"
    )
    assert pci_names.vendor_name("0x1234", database) == "Example Networks"
    assert pci_names.device_name("0x1234", "0xabcd", database) == "Widget 100G"
    assert pci_names.device_name("0x1234", "0xffff", database) == "0xffff"
    assert pci_names.device_name("0x15b3", "0x1021", database) == "MT2910 Family [ConnectX-7]"
