"""PCI vendor and device names, as DRANET publishes them (`dra.net/pciVendor`, `dra.net/pciDevice`).

sysfs gives numeric ids (0x15b3, 0x1021); DRANET publishes the pci.ids
database's names ("Mellanox Technologies", "MT2910 Family [ConnectX-7]").
The NICs that GPU nodes carry are named here, so the names do not depend on
which pci.ids a node (or a test machine) has installed; any other id is
looked up in the node's pci.ids (`/usr/share/misc/pci.ids` or
`/usr/share/hwdata/pci.ids`), and published as its hex id when neither
knows it.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

_VENDORS = {
    "15b3": "Mellanox Technologies",
    "1d0f": "Amazon.com, Inc.",
    "8086": "Intel Corporation",
    "14e4": "Broadcom Inc. and subsidiaries",
    "10de": "NVIDIA Corporation",
}
_DEVICES = {
    ("15b3", "101b"): "MT28908 Family [ConnectX-6]",
    ("15b3", "101d"): "MT2892 Family [ConnectX-6 Dx]",
    ("15b3", "101f"): "MT2894 Family [ConnectX-6 Lx]",
    ("15b3", "1021"): "MT2910 Family [ConnectX-7]",
    ("15b3", "1023"): "CX8 Family [ConnectX-8]",
    ("15b3", "a2dc"): "MT43244 BlueField-3 integrated ConnectX-7 network controller",
    ("1d0f", "efa0"): "Elastic Fabric Adapter (EFA)",
    ("1d0f", "efa1"): "Elastic Fabric Adapter (EFA)",
    ("1d0f", "efa2"): "Elastic Fabric Adapter (EFA)",
    ("1d0f", "ec20"): "Elastic Network Adapter (ENA)",
}
PCI_IDS_PATHS = (Path("/usr/share/misc/pci.ids"), Path("/usr/share/hwdata/pci.ids"))


def _bare(hex_id: str) -> str:
    return hex_id.lower().removeprefix("0x")


@cache
def _database(path: Path | None) -> tuple[dict[str, str], dict[tuple[str, str], str]]:
    """Vendors and devices from a pci.ids file (vendor lines unindented, device lines one tab)."""
    vendors: dict[str, str] = {}
    devices: dict[tuple[str, str], str] = {}
    candidates = (path,) if path is not None else PCI_IDS_PATHS
    for candidate in candidates:
        try:
            lines = candidate.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            continue
        vendor = ""
        for line in lines:
            if not line or line.startswith("#"):
                continue
            if line.startswith("C "):
                break  # the class list follows the vendors
            if not line.startswith("\t"):
                vendor, _, name = line.partition("  ")
                vendors[vendor] = name.strip()
            elif not line.startswith("\t\t") and vendor:
                device, _, name = line.strip().partition("  ")
                devices[(vendor, device)] = name.strip()
        break
    return vendors, devices


def vendor_name(vendor: str, database: Path | None = None) -> str:
    key = _bare(vendor)
    return _VENDORS.get(key) or _database(database)[0].get(key) or vendor


def device_name(vendor: str, device: str, database: Path | None = None) -> str:
    key = (_bare(vendor), _bare(device))
    return _DEVICES.get(key) or _database(database)[1].get(key) or device
