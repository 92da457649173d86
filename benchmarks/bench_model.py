"""Manifest decoding speed: ResourceSlices with NVIDIA-like GPUs, as YAML and as JSON.

Generates N ResourceSlices of D devices each, in the shape the NVIDIA DRA
driver publishes (productName, architecture, cudaComputeCapability,
driverVersion, pciBusID, pcieRoot, memory), prints each as the text
`kubectl get resourceslices -o yaml|json` would give, and times
`allot.model.loader.load_text` on it: parse, decode into records, default,
validate. Peak memory is measured in a separate run under tracemalloc, which
slows Python down, so the timings come from runs without it.

    PYTHONPATH=src python benchmarks/bench_model.py [--slices 2000] [--devices 8] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import time
import tracemalloc
from typing import Any

import yaml

from allot.model.loader import load_text

PRODUCTS = [
    ("NVIDIA H100 80GB HBM3", "Hopper", "9.0.0", "81559Mi"),
    ("NVIDIA A100-SXM4-80GB", "Ampere", "8.0.0", "81920Mi"),
]


def device(node: int, minor: int) -> dict[str, Any]:
    product, architecture, capability, memory = PRODUCTS[node % len(PRODUCTS)]
    bus = 0x19 + 0x20 * minor
    return {
        "name": f"gpu-{minor}",
        "attributes": {
            "architecture": {"string": architecture},
            "brand": {"string": "Nvidia"},
            "cudaComputeCapability": {"version": capability},
            "cudaDriverVersion": {"version": "12.8.0"},
            "driverVersion": {"version": "570.133.20"},
            "productName": {"string": product},
            "resource.kubernetes.io/pciBusID": {"string": f"0000:{bus:02x}:00.0"},
            "resource.kubernetes.io/pcieRoot": {"string": f"pci0000:{bus - 4:02x}"},
            "type": {"string": "gpu"},
            "uuid": {"string": f"GPU-{node:08x}-{minor:04x}-4000-8000-{node * 8 + minor:012x}"},
        },
        "capacity": {"memory": {"value": memory}},
    }


def resource_slices(count: int, devices: int) -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {
                "name": f"node-{n}-gpu.nvidia.com-x7k2p",
                "generateName": f"node-{n}-gpu.nvidia.com-",
            },
            "spec": {
                "driver": "gpu.nvidia.com",
                "nodeName": f"node-{n}",
                "pool": {"name": f"node-{n}", "generation": 1, "resourceSliceCount": 1},
                "devices": [device(n, minor) for minor in range(devices)],
            },
        }
        for n in range(count)
    ]


def timed(text: str, source: str, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        load_text(text, source)
        best = min(best, time.perf_counter() - start)
    return best


def peak_mib(text: str, source: str) -> float:
    tracemalloc.start()
    load_text(text, source)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--slices", type=int, default=2000)
    parser.add_argument("--devices", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=3, help="runs per format; the best is reported")
    args = parser.parse_args()
    objects = resource_slices(args.slices, args.devices)
    texts = {
        "yaml": (
            yaml.dump({"apiVersion": "v1", "kind": "List", "items": objects}, Dumper=yaml.CSafeDumper),
            "slices.yaml",
        ),
        "json": (json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}), "slices.json"),
    }
    label = f"model decode {args.slices} slices x {args.devices} devices"
    for fmt, (text, source) in texts.items():
        seconds = timed(text, source, args.repeat)
        rate = args.slices / seconds
        devices = args.slices * args.devices / seconds
        print(
            f"{label} {fmt:4s} {seconds:6.2f} s  {rate:8.0f} slices/s  {devices:8.0f} devices/s  "
            f"({len(text) / 2**20:.1f} MiB of text)"
        )
    for fmt, (text, source) in texts.items():
        print(f"{label} {fmt:4s} peak memory {peak_mib(text, source):6.1f} MiB (tracemalloc)")


if __name__ == "__main__":
    main()
