"""Writes the hand-made NVML recordings in this folder: what NVML would report on machines shaped
like allot's presets (DGX H100 with and without MIG, AWS p4d.24xlarge, a PCIe L40S server).

None of these was read from a real GPU: values come from the presets' catalogue (product names,
memory in MiB as NVML reports it, PCI bus ids in NVML's 8-digit-domain form), UUIDs are the ones the
presets derive for node `<preset>-00`, and the two MIG devices on the DGX's GPU 0 are invented.
Run `python tests/agent/recordings/make_recordings.py` from the repository root to rewrite them.
"""

from __future__ import annotations

from pathlib import Path

from allot.agent.inventory import Gpu, GpuInventory, MigDevice, Recording, to_yaml
from allot.model.presets.catalog import SHAPES, NodeShape
from allot.model.presets.devices import gpu_uuid

CUDA = {"Hopper": "9.0", "Ampere": "8.0", "Ada Lovelace": "8.9"}
HERE = Path(__file__).parent


def nvml_bus_id(address: str) -> str:
    """sysfs's "0000:1b:00.0" as NVML prints it: "00000000:1B:00.0"."""
    domain, bus, rest = address.split(":")
    return f"0000{domain}:{bus.upper()}:{rest.upper()}"


def nvml_inventory(shape: NodeShape, node: str, *, mig: bool = False) -> GpuInventory:
    model = shape.gpu
    memory = int(model.memory.removesuffix("Mi")) * 2**20
    gpus = []
    for index, slot in enumerate(shape.gpus):
        present: tuple[MigDevice, ...] = ()
        if mig and index == 0:
            # Two instances someone made on GPU 0: a 1g at slice 0 and a 3g at slices 4-7.
            present = (
                MigDevice(uuid="MIG-5c89a4f1-2b0e-5d3a-9f61-0c7e2a8d4b13", profile="1g.10gb", gi_profile_id=19,
                          placement_start=0, placement_size=1, gpu_instance_id=9, compute_instance_id=0,
                          memory_bytes=9856 * 2**20, multiprocessors=16,
                          caps=("/dev/nvidia-caps/nvidia-cap84", "/dev/nvidia-caps/nvidia-cap85")),
                MigDevice(uuid="MIG-e1f0b7c2-93d4-5a8e-b2c6-7d41f9a03e58", profile="3g.40gb", gi_profile_id=9,
                          placement_start=4, placement_size=4, gpu_instance_id=2, compute_instance_id=0,
                          memory_bytes=40192 * 2**20, multiprocessors=60,
                          caps=("/dev/nvidia-caps/nvidia-cap21", "/dev/nvidia-caps/nvidia-cap22")),
            )  # fmt: skip
        gpus.append(
            Gpu(
                index=index,
                minor=index,
                uuid=gpu_uuid(node, index),
                product_name=model.product_name,
                brand="Nvidia",
                architecture=model.architecture,
                compute_capability=CUDA[model.architecture],
                memory_bytes=memory,
                pci_bus_id=nvml_bus_id(slot.pci_bus_id),
                mig_enabled=mig,
                mig_pending=mig,
                compute_mode="Default",
                mig_devices=present,
            )
        )
    return GpuInventory(
        driver_version=shape.driver_version,
        cuda_driver_version=12080,
        nvml_version="12.570.133.20",
        gpus=tuple(gpus),
    )


MACHINES = {
    "dgx-h100.yaml": ("dgx-h100", False),
    "dgx-h100-mig.yaml": ("dgx-h100", True),
    "p4d-24xlarge.yaml": ("p4d-24xlarge", False),
    "pcie-l40s.yaml": ("pcie-l40s", False),
}

if __name__ == "__main__":
    for file, (preset, mig) in MACHINES.items():
        node = f"{preset}-00"
        recording = Recording(
            description=(
                f"HAND-MADE, not read from a real GPU: NVML as it would report the GPUs of allot's {preset} "
                f"preset on node {node}" + (" with MIG on and two MIG devices on GPU 0" if mig else "")
            ),
            gpus=nvml_inventory(SHAPES[preset], node, mig=mig),
        )
        (HERE / file).write_text(to_yaml(recording))
