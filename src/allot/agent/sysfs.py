"""Reading a machine's PCI functions, network and RDMA devices and NUMA nodes from sysfs.

Everything is read under a root folder (`/sys` on a node, `/host/sys` in the
DaemonSet, a tree a test built): nothing here assumes the real `/sys`.

* `bus/pci/devices/<address>`: a link into `devices/pci<domain>:<bus>/...`;
  the first component, the root complex, is the device's PCIe root
  (`resource.kubernetes.io/pcieRoot`); `numa_node`, `vendor`, `device`,
  `class`, `sriov_totalvfs` and a `physfn` link (an SR-IOV VF) beside it.
  Only network, display and accelerator functions (classes 0x02, 0x03,
  0x12) are kept: the ones that are or may become devices.
* `class/net/<if>`: `device` (a link to the PCI function; virtual
  interfaces have none), `address`, `mtu`, `operstate`.
* `class/infiniband/<dev>`: `device`, and `ports/<n>/state` ("4: ACTIVE").
* `devices/system/node/node<N>/cpulist` and, per CPU,
  `devices/system/cpu/cpu<N>/topology/{physical_package_id,thread_siblings_list}`.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from allot.agent.inventory import HostInventory, NetInterface, NumaNode, PciFunction, RdmaDevice

_ROOT_COMPLEX = re.compile(r"^pci[0-9a-f]{4}:[0-9a-f]{2}$")
_PCI_ADDRESS = re.compile(r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")
_KEPT_CLASSES = ("0x02", "0x03", "0x12")


def _read(path: Path, default: str = "") -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return default


def _int(path: Path, default: int) -> int:
    try:
        return int(_read(path), 0)
    except ValueError:
        return default


def parse_cpulist(text: str) -> tuple[int, ...]:
    """The kernel's CPU list format: "0-3,8,10-11" -> (0, 1, 2, 3, 8, 10, 11)."""
    cpus: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        low, _, high = part.partition("-")
        cpus.extend(range(int(low), int(high or low) + 1))
    return tuple(sorted(set(cpus)))


def _resolved_parts(link: Path, root: Path) -> tuple[str, ...]:
    """Components of the link's target relative to the sysfs root (links there are relative)."""
    try:
        target = Path(os.path.realpath(link))
        return target.relative_to(Path(os.path.realpath(root))).parts
    except (OSError, ValueError):
        return ()


def pci_address_of(device_link: Path, root: Path) -> str | None:
    """The PCI function a class device's `device` link points at, or None (virtual, or not PCI)."""
    if not device_link.exists():
        return None
    parts = _resolved_parts(device_link, root)
    name = parts[-1] if parts else ""
    return name if _PCI_ADDRESS.match(name) else None


def _pci_function(path: Path, root: Path) -> PciFunction:
    parts = _resolved_parts(path, root)
    complex_ = next((p for p in parts if _ROOT_COMPLEX.match(p)), "")
    return PciFunction(
        address=path.name,
        root=complex_,
        numa=_int(path / "numa_node", -1),
        vendor=_read(path / "vendor"),
        device=_read(path / "device"),
        device_class=_read(path / "class"),
        sriov_totalvfs=_int(path / "sriov_totalvfs", 0),
        virtual_function=(path / "physfn").exists(),
    )


def read_pci(root: Path) -> tuple[PciFunction, ...]:
    folder = root / "bus" / "pci" / "devices"
    found = []
    for path in sorted(folder.iterdir()) if folder.is_dir() else ():
        if _read(path / "class").startswith(_KEPT_CLASSES):
            found.append(_pci_function(path, root))
    return tuple(found)


def read_net(root: Path) -> tuple[NetInterface, ...]:
    folder = root / "class" / "net"
    found = []
    for path in sorted(folder.iterdir()) if folder.is_dir() else ():
        found.append(
            NetInterface(
                name=path.name,
                pci_address=pci_address_of(path / "device", root),
                mac=_read(path / "address"),
                mtu=_int(path / "mtu", 0),
                operstate=_read(path / "operstate", "unknown"),
            )
        )
    return tuple(found)


def read_rdma(root: Path) -> tuple[RdmaDevice, ...]:
    folder = root / "class" / "infiniband"
    found = []
    for path in sorted(folder.iterdir()) if folder.is_dir() else ():
        ports_folder = path / "ports"
        ports = {
            port.name: _read(port / "state", "unknown")
            for port in (sorted(ports_folder.iterdir()) if ports_folder.is_dir() else ())
        }
        found.append(
            RdmaDevice(name=path.name, pci_address=pci_address_of(path / "device", root), ports=ports)
        )
    return tuple(found)


def read_numa(root: Path) -> tuple[NumaNode, ...]:
    folder = root / "devices" / "system" / "node"
    cpu_folder = root / "devices" / "system" / "cpu"
    nodes = []
    for path in folder.glob("node[0-9]*") if folder.is_dir() else ():
        cpus = parse_cpulist(_read(path / "cpulist"))
        if not cpus:
            continue  # memory-only nodes (CXL, HBM) hold no CPUs to publish
        topology = cpu_folder / f"cpu{cpus[0]}" / "topology"
        smt = any(
            len(
                parse_cpulist(_read(cpu_folder / f"cpu{cpu}" / "topology" / "thread_siblings_list", str(cpu)))
            )
            > 1
            for cpu in cpus
        )
        nodes.append(
            NumaNode(
                id=int(path.name.removeprefix("node")),
                cpus=cpus,
                socket=_int(topology / "physical_package_id", 0),
                smt=smt,
            )
        )
    return tuple(sorted(nodes, key=lambda n: n.id))


def read_host(root: Path | str) -> HostInventory:
    """Everything the agent reads from sysfs under `root`."""
    base = Path(root)
    return HostInventory(pci=read_pci(base), net=read_net(base), rdma=read_rdma(base), numa=read_numa(base))
