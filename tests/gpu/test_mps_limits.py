"""On a machine with an NVIDIA GPU: the MPS limits a 30 % / 10 GiB fractional claim gets hold.

The plugin's own MPS manager starts a control daemon for GPU 0 (as it does for a fractional GPU's
first claim), the environment comes from the CDI spec the plugin writes for such a claim, and a
CUDA program under it (the driver API through ctypes: no toolkit needed) asks for more memory
than the share: the allocation must fail, and one within the share must succeed. Skipped where
there is no GPU, no driver or no MPS (every CI run so far: see docs/kubelet-plugin.md).

Run it alone on a GPU machine: `python -m pytest tests/gpu -q -s` (prints what it saw).
"""

from __future__ import annotations

import ctypes.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from allot.agent.inventory import Gpu
from allot.agent.kubelet.cdi import claim_spec, exposed_devices
from allot.agent.kubelet.mps import MpsManager, SubprocessRunner
from allot.agent.kubelet.targets import GIB, Target
from allot.model.resource import DeviceRequestAllocationResult

# A CUDA program: allocate N bytes on device 0 and say whether it worked (CUDA result code).
PROGRAM = """
import ctypes, sys
cuda = ctypes.CDLL("libcuda.so.1")
assert cuda.cuInit(0) == 0, "cuInit"
device, context, pointer = ctypes.c_int(), ctypes.c_void_p(), ctypes.c_uint64()
assert cuda.cuDeviceGet(ctypes.byref(device), 0) == 0, "cuDeviceGet"
assert cuda.cuCtxCreate_v2(ctypes.byref(context), 0, device) == 0, "cuCtxCreate"
print(cuda.cuMemAlloc_v2(ctypes.byref(pointer), ctypes.c_size_t(int(sys.argv[1]))))
"""
OUT_OF_MEMORY = 2  # CUDA_ERROR_OUT_OF_MEMORY


def _gpu0() -> tuple[str, int] | None:
    if shutil.which("nvidia-smi") is None or shutil.which("nvidia-cuda-mps-control") is None:
        return None
    if ctypes.util.find_library("cuda") is None:
        return None
    done = subprocess.run(
        ["nvidia-smi", "-i", "0", "--query-gpu=uuid,memory.total", "--format=csv,noheader,nounits"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode != 0 or not done.stdout.strip():
        return None
    uuid, memory = (part.strip() for part in done.stdout.splitlines()[0].split(","))
    return uuid, int(memory) * 1024 * 1024


def test_a_30_percent_10_gib_share_cannot_allocate_more_than_10_gib(tmp_path: Path) -> None:
    found = _gpu0()
    if found is None:
        pytest.skip("no NVIDIA GPU with driver and MPS here")
    uuid, memory = found
    gpu = Gpu(index=0, minor=0, uuid=uuid, product_name="", architecture="", compute_capability="",
              memory_bytes=memory, pci_bus_id="")  # fmt: skip
    result = DeviceRequestAllocationResult(
        request="gpu", driver="hami-core-gpu.project-hami.io", pool="n", device="gpu-0"
    )
    share = Target(result, "shared", gpu, uuid, ("/dev/nvidia0",), cores=30, memory_bytes=10 * GIB)
    # The host's /dev/shm on both sides here (in a pod, the plugin gives both the GPU's own folder).
    mps = MpsManager(tmp_path / "mps", SubprocessRunner(), private_shm=False)
    folders, _ = mps.ensure(uuid)
    try:
        spec = claim_spec(exposed_devices("claim", [share]), {uuid: folders})
        env = dict(
            e.split("=", 1)
            for e in spec["containerEdits"]["env"] + spec["devices"][0]["containerEdits"]["env"]
        )
        env["CUDA_MPS_PIPE_DIRECTORY"] = str(folders.pipe)  # the container sees it at /tmp/nvidia-mps
        print("client environment:", env)

        def allocate(size: int) -> int:
            done = subprocess.run(
                [sys.executable, "-c", PROGRAM, str(size)],
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert done.returncode == 0, done.stderr
            print(f"cuMemAlloc({size / GIB:.1f} GiB) under MPS: CUDA result {done.stdout.strip()}")
            return int(done.stdout.strip())

        assert allocate(9 * GIB) == 0
        assert allocate(11 * GIB) == OUT_OF_MEMORY
        print("MPS server list:", mps._ask(uuid, "get_server_list").output)
    finally:
        mps.stop(uuid)
        print("control.log:\n" + (folders.log / "control.log").read_text(errors="replace")[-2000:])
