"""`allot agent discover` and `allot agent run` as a user runs them."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from click.testing import CliRunner

from agent.live import ready_node, slices
from agent.machines import build_sysfs, preset_slices
from allot.cli.main import cli
from allot.model.codec import to_data
from allot.model.loader import load_text
from allot.model.presets.catalog import SHAPES
from allot.model.resource import ResourceSlice
from controlplane import ControlPlane

RECORDINGS = Path(__file__).parent / "recordings"


def discover(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["agent", "discover", *args])
    return result.exit_code, result.stdout, result.stderr


def test_discover_prints_the_slices_a_node_would_publish(tmp_path: Path) -> None:
    root = build_sysfs(tmp_path / "sys", SHAPES["dgx-h100"], "dgx-h100-00")
    code, out, err = discover(
        "--node-name",
        "dgx-h100-00",
        "--sysfs-root",
        str(root),
        "--from",
        str(RECORDINGS / "dgx-h100-mig.yaml"),
    )
    assert code == 0, err
    loaded = [o for o in load_text(out).objects if isinstance(o, ResourceSlice)]
    expected = preset_slices(SHAPES["dgx-h100"], "dgx-h100-00", gpu_mode="mig")
    assert {s.name: to_data(s.spec) for s in loaded} == {s.name: to_data(s.spec) for s in expected}
    assert "node dgx-h100-00: 8 GPUs, 12 NICs, 2 NUMA nodes in 11 ResourceSlices" in err


def test_a_recording_replays_to_the_same_slices(tmp_path: Path) -> None:
    root = build_sysfs(tmp_path / "sys", SHAPES["p4d-24xlarge"], "p4d-24xlarge-00")
    recording = tmp_path / "node.yaml"
    common = ("--node-name", "p4d-24xlarge-00", "-o", "json")
    code, live, err = discover(*common, "--sysfs-root", str(root), "--from", str(RECORDINGS / "p4d-24xlarge.yaml"),
                               "--record", str(recording))  # fmt: skip
    assert code == 0, err
    empty = tmp_path / "empty"
    empty.mkdir()
    code, replayed, err = discover(*common, "--sysfs-root", str(empty), "--from", str(recording))
    assert code == 0, err
    assert replayed == live
    assert '"dra.net/rdmaDevice"' in live


def test_a_bad_recording_is_named_with_its_field(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    text = (
        (RECORDINGS / "pcie-l40s.yaml")
        .read_text()
        .replace("memoryBytes: 48305799168", "memoryBytes: lots", 1)
    )
    bad.write_text(text)
    code, out, err = discover("--from", str(bad))
    assert code == 1 and out == ""
    assert f"error: {bad}: gpus.gpus[0].memoryBytes: Expected `int`, got `str`" in err


def test_a_bad_sharing_mode_is_a_usage_error() -> None:
    code, _, err = discover("--gpu-sharing", "0=mig")
    assert code == 2 and "MIG follows the GPU's MIG mode" in err


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_run_publishes_serves_metrics_and_leaves_slices_on_sigterm(
    control_plane: ControlPlane, tmp_path: Path
) -> None:
    ready_node(control_plane, "cli-00")
    root = build_sysfs(tmp_path / "sys", SHAPES["pcie-l40s"], "cli-00")
    port = free_port()
    command = [
        sys.executable, "-c", "from allot.cli.main import main; main()", "agent", "run", "--node-name", "cli-00",
        "--kubeconfig", str(control_plane.kubeconfig), "--sysfs-root", str(root),
        "--from", str(RECORDINGS / "pcie-l40s.yaml"), "--poll", "200ms", "--metrics-address", f"127.0.0.1:{port}",
    ]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2] / "src")}
    agent = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        deadline = time.monotonic() + 60
        while len(slices(control_plane, "cli-00")) < 3 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert sorted(s["spec"]["driver"] for s in slices(control_plane, "cli-00")) == [
            "dra.cpu",
            "dra.net",
            "gpu.nvidia.com",
        ]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
            metrics = response.read().decode()
        assert 'allot_agent_device_healthy{device="gpu-3",driver="gpu.nvidia.com"} 1.0' in metrics
        assert 'allot_agent_pool_generation{driver="dra.net"} 1.0' in metrics
        agent.send_signal(signal.SIGTERM)
        assert agent.wait(30) == 0, agent.stderr.read() if agent.stderr else ""
    finally:
        if agent.poll() is None:
            agent.kill()
            agent.wait()
        for stream in (agent.stdout, agent.stderr):
            if stream is not None:
                stream.close()
    assert len(slices(control_plane, "cli-00")) == 3
