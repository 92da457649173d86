"""The kubelet plugin, spoken to as the kubelet speaks to it, with claims `allot run` allocated on a
real API server.

Two nodes published by the agent from recorded machines: `kpl-00` (PCIe L40S: GPU 0 fractional,
GPU 1 time-sliced in 2 replicas, GPUs 2 and 3 whole) and `kpm-00` (DGX H100 with MIG on; GPU 0
holds MIG devices 1g.10gb at slice 0 and 3g.40gb at slice 4). `allot run` runs with
`trustDomain: any`, so it puts a second namespace's share on the fractional GPU: the node, whose
plugin keeps namespaces apart, must refuse it. The MPS control command is the stand-in of
fake_mps_control.py (a real daemon process per GPU, its calls recorded); everything else is real:
the API server, allot's scheduler, the gRPC sockets, the files.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from agent.kubelet.kubelet import Kubelet, claim_ref
from agent.live import agent, machine, started
from allot.agent.client import ApiClient, make_client
from allot.agent.gpu_source import ReplayGpuSource
from allot.agent.kubelet.claims import ApiClaimReader
from allot.agent.kubelet.plugin import DRIVERS, PluginOptions, start_plugin
from allot.agent.kubelet.proto import dra_pb2 as dra
from allot.agent.kubelet.server import PluginServer
from allot.agent.node import AgentConfig
from allot.agent.runner import Agent
from allot.cli.main import cli
from allot.model.codec import dump_yaml
from allot.model.presets.classes import device_classes
from allot.model.presets.gpu_sharing import HAMI_DRIVER, hami_device_class
from controlplane import ControlPlane
from live.cluster import AllotProcess, eventually

FAKE_MPS = Path(__file__).with_name("fake_mps_control.py")
GPU = "gpu.nvidia.com"
GIB = 1024**3

SCHEDULER_CONFIG = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: allot
  pluginConfig:
  - name: GpuIsolation
    args: {trustDomain: any}
"""


def _claim(namespace: str, name: str, requests: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"devices": {"requests": requests}},
    }


def _request(
    name: str, device_class: str, selector: str = "", capacity: dict[str, str] | None = None
) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": device_class}
    if selector:
        exactly["selectors"] = [{"cel": {"expression": selector}}]
    if capacity:
        exactly["capacity"] = {"requests": capacity}
    return {"name": name, "exactly": exactly}


def _pod(namespace: str, name: str, claim: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "schedulerName": "allot",
            "terminationGracePeriodSeconds": 0,
            "containers": [
                {
                    "name": "main",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": {"cpu": "100m"}, "claims": [{"name": "gpu"}]},
                }
            ],
            "resourceClaims": [{"name": "gpu", "resourceClaimName": claim}],
        },
    }


@dataclass
class Node:
    name: str
    agent: Agent
    gpus: ReplayGpuSource
    root: Path  # the plugin's folders live here

    def uuid(self, index: int) -> str:
        return self.gpus.recorded.gpus[index].uuid

    def options(self, **changes: Any) -> PluginOptions:
        base = dict(
            cdi_dir=self.root / "cdi",
            state_dir=self.root / "state",
            registry_dir=self.root / "reg",
            plugins_dir=self.root / "plugins",
            mps_dir=self.root / "mps",
            mps_control=str(FAKE_MPS),
            mps_private_shm=_private_shm_works(),
        )
        return PluginOptions(**{**base, **changes})

    async def plugin(self, api: ApiClient) -> PluginServer:
        return await start_plugin(
            self.name,
            self.options(),
            ApiClaimReader(api),
            published=lambda: self.agent.devices,
            nvml=self.gpus.inventory,
            replicas=2,
        )

    def mps_calls(self, uuid: str) -> list[dict[str, str]]:
        path = self.root / "mps" / uuid / "log" / "calls.jsonl"
        return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []

    def daemon_pid(self, uuid: str) -> int | None:
        try:
            pid = int((self.root / "mps" / uuid / "pipe" / "fake-daemon.pid").read_text())
            state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
        except (OSError, ValueError):
            return None
        return pid if state != "Z" else None

    def specs(self) -> list[Path]:
        return sorted((self.root / "cdi").glob("allot.dev-gpu_*.json"))


def _private_shm_works() -> bool:
    probe = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "--", "mount", "--bind", "/tmp", "/mnt"],
        capture_output=True,
        check=False,
    )
    return probe.returncode == 0


@pytest.fixture
def short_root() -> Iterator[Path]:
    # Unix socket paths are limited to 107 bytes: pytest's tmp_path can be longer.
    root = Path(tempfile.mkdtemp(prefix="kp-", dir="/tmp"))
    try:
        yield root
    finally:
        for pidfile in root.glob("*/mps/*/pipe/fake-daemon.pid"):
            with contextlib.suppress(OSError, ValueError):
                os.kill(int(pidfile.read_text()), signal.SIGTERM)
        shutil.rmtree(root, ignore_errors=True)


@contextlib.asynccontextmanager
async def serving(node: Node, plane: ControlPlane) -> AsyncIterator[tuple[PluginServer, Kubelet]]:
    api = make_client(plane.kubeconfig, qps=100, burst=100)
    server = await node.plugin(api)
    kubelet = Kubelet.empty(node.root / "reg")
    try:
        for driver in DRIVERS:
            await kubelet.register(driver)
        yield server, kubelet
    finally:
        await server.stop(0)
        await api.client.close()


def _ready_node(plane: ControlPlane, name: str) -> dict[str, Any]:
    """A Node as kubelet would have registered it, Ready and without the not-ready taint the API
    server puts on new nodes (no node controller runs here); over HTTP, cheaper than kubectl."""
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
    }
    status, body = plane.request("POST", "/api/v1/nodes", node)
    assert status == 201, body
    resources = {"cpu": "8", "memory": "32Gi", "pods": "110"}
    ready = {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "ok"}
    patch = {"status": {"allocatable": resources, "capacity": resources, "conditions": [ready]}}
    merge = "application/merge-patch+json"
    assert plane.request("PATCH", f"/api/v1/nodes/{name}/status", patch, merge)[0] == 200
    assert plane.request("PATCH", f"/api/v1/nodes/{name}", {"spec": {"taints": None}}, merge)[0] == 200
    return node


def _cluster(plane: ControlPlane, tmp_path: Path, short_root: Path) -> tuple[Node, Node]:
    namespaces = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}} for n in ("team-a", "team-b")
    ]
    plane.apply(dump_yaml([*device_classes(), hami_device_class()]) + "\n---\n" + "\n---\n".join(
        json.dumps(n) for n in namespaces))  # fmt: skip
    nodes = []
    for name, preset, recording, config in (
        ("kpl-00", "pcie-l40s", "pcie-l40s.yaml",
         AgentConfig(sharing={"0": "shared", "1": "time-sliced"}, replicas=2)),
        ("kpm-00", "dgx-h100", "dgx-h100-mig.yaml", AgentConfig()),
    ):  # fmt: skip
        _ready_node(plane, name)
        sysfs, gpus = machine(tmp_path, preset, name, recording)
        root = short_root / name
        nodes.append(Node(name, agent(plane, sysfs, gpus, name, config=config), gpus, root))
    return nodes[0], nodes[1]


def _claims(l40s: Node, mig: Node) -> list[dict[str, Any]]:
    gpu2, gpu3, h100 = l40s.uuid(2), l40s.uuid(3), mig.uuid(0)
    mig_at = 'device.attributes["gpu.nvidia.com"].profile == "1g.10gb" && device.attributes["gpu.nvidia.com"].parentUUID == "{}" && device.attributes["gpu.nvidia.com"].placementStart == {}'
    return [
        _claim("team-a", "frac-a", [_request("gpu", HAMI_DRIVER, capacity={"cores": "30", "memory": "10Gi"})]),
        _claim("team-a", "frac-a2", [_request("gpu", HAMI_DRIVER, capacity={"cores": "20", "memory": "4Gi"})]),
        _claim("team-b", "frac-b", [_request("gpu", HAMI_DRIVER, capacity={"cores": "10", "memory": "1Gi"})]),
        _claim("team-a", "whole-a", [_request("gpu", GPU, f'device.attributes["gpu.nvidia.com"].uuid == "{gpu2}"')]),
        _claim("team-a", "sliced-a", [_request("gpu", GPU, 'device.attributes["gpu.nvidia.com"].sharingStrategy == "TimeSlicing"')]),
        _claim("team-a", "mixed-a", [
            _request("frac", HAMI_DRIVER, capacity={"cores": "5", "memory": "1Gi"}),
            _request("whole", GPU, f'device.attributes["gpu.nvidia.com"].uuid == "{gpu3}"'),
        ]),
        _claim("team-a", "mig-a", [_request("gpu", "mig.nvidia.com", mig_at.format(h100, 0))]),
        _claim("team-a", "mig-missing", [_request("gpu", "mig.nvidia.com", mig_at.format(h100, 1))]),
        _claim("team-a", "cpu-a", [_request("cpus", "dra.cpu", 'device.attributes["dra.cpu"].numCPUs > 0')]),
    ]  # fmt: skip


def _allocated(plane: ControlPlane, count: int) -> list[dict[str, Any]]:
    """Every claim of the cluster, once `count` of them are allocated (read over HTTP: cheaper
    than a kubectl per poll)."""
    _, body = plane.request("GET", "/apis/resource.k8s.io/v1/resourceclaims")
    claims: list[dict[str, Any]] = body["items"] if isinstance(body, dict) else []
    done = [c for c in claims if (c.get("status") or {}).get("allocation")]
    return done if len(done) >= count else []


def _spec(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


def _env(edits: dict[str, Any]) -> dict[str, str]:
    return dict(entry.split("=", 1) for entry in edits.get("env", []))


def test_the_kubelet_prepares_and_unprepares_claims_allot_allocated(
    control_plane: ControlPlane, tmp_path: Path, short_root: Path
) -> None:
    plane = control_plane
    config = tmp_path / "scheduler.yaml"
    config.write_text(SCHEDULER_CONFIG)
    # allot starts first: its start-up overlaps with the cluster's.
    with AllotProcess(plane, f"--config={config}"):
        l40s, mig = _cluster(plane, tmp_path, short_root)
        claims = _claims(l40s, mig)

        async def publish() -> None:
            for node in (l40s, mig):
                async with started(node.agent):
                    pass

        asyncio.run(publish())
        pods = [
            _pod(c["metadata"]["namespace"], c["metadata"]["name"], c["metadata"]["name"]) for c in claims
        ]
        # CPUs are on both nodes: the CPU claim's pod goes to the L40S node.
        cpu_pod = next(p for p in pods if p["metadata"]["name"] == "cpu-a")
        cpu_pod["spec"]["nodeSelector"] = {"kubernetes.io/hostname": "kpl-00"}
        plane.apply("\n---\n".join(json.dumps(o) for o in [*claims, *pods]))
        try:
            allocated = eventually(lambda: _allocated(plane, len(claims)), what="every claim allocated")
        except AssertionError as err:
            conditions = plane.kubectl("get", "pods", "-A", "-o", "jsonpath={.items[*].status.conditions}")
            raise AssertionError(f"{err}\n{conditions}") from None
    refs = {
        c["metadata"]["name"]: dra.Claim(
            namespace=c["metadata"]["namespace"], name=c["metadata"]["name"], uid=c["metadata"]["uid"]
        )
        for c in allocated
    }
    asyncio.run(_conversation(plane, l40s, mig, refs))


async def _conversation(plane: ControlPlane, l40s: Node, mig: Node, refs: dict[str, dra.Claim]) -> None:
    gpu0 = l40s.uuid(0)
    async with serving(l40s, plane) as (_, kubelet):
        # A fractional share: the CDI spec names the GPU by UUID and carries its MPS limits.
        answer = (await kubelet.prepare(HAMI_DRIVER, refs["frac-a"]))[refs["frac-a"].uid]
        assert answer.error == ""
        (device,) = answer.devices
        name = f"{refs['frac-a'].uid}-gpu-0"
        assert (device.pool_name, device.device_name, list(device.request_names)) == (
            "kpl-00",
            "gpu-0",
            ["gpu"],
        )
        assert list(device.cdi_device_ids) == [f"allot.dev/gpu={name}"]
        (spec_path,) = l40s.specs()
        spec = _spec(spec_path)
        assert (spec["cdiVersion"], spec["kind"]) == ("0.5.0", "allot.dev/gpu")
        common = _env(spec["containerEdits"])
        assert common == {"NVIDIA_VISIBLE_DEVICES": gpu0, "CUDA_VISIBLE_DEVICES": gpu0}
        (cdi_device,) = spec["devices"]
        assert cdi_device["name"] == name
        edits = cdi_device["containerEdits"]
        assert [n["path"] for n in edits["deviceNodes"]] == ["/dev/nvidia0"]
        assert _env(edits) == {
            "CUDA_MPS_PIPE_DIRECTORY": "/tmp/nvidia-mps",
            "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": "30",
            "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT": "0=10240M",
        }
        mounts = {m["containerPath"]: m["hostPath"] for m in edits["mounts"]}
        folder = l40s.root / "mps" / gpu0
        assert mounts == {"/tmp/nvidia-mps": str(folder / "pipe"), "/var/log/nvidia-mps": str(folder / "log"),
                          "/dev/shm": str(folder / "shm")}  # fmt: skip
        # The daemon serves that GPU only, on that pipe folder, and sees that shared memory.
        assert [
            (c["call"], c["visible"], c["pipe"]) for c in l40s.mps_calls(gpu0) if c["call"] == "start"
        ] == [("start", gpu0, str(folder / "pipe"))]
        assert l40s.daemon_pid(gpu0) is not None
        if l40s.options().mps_private_shm:
            assert (folder / "shm" / f"allot-fake-mps-{gpu0}").exists()
            assert not Path(f"/dev/shm/allot-fake-mps-{gpu0}").exists()

        # Repeated: the same answer, no second daemon.
        again = (await kubelet.prepare(HAMI_DRIVER, refs["frac-a"]))[refs["frac-a"].uid]
        assert again == answer
        assert [c["call"] for c in l40s.mps_calls(gpu0)].count("start") == 1

        # A second share of team-a joins the daemon; team-b's share on the same GPU is refused.
        both = await kubelet.prepare(HAMI_DRIVER, refs["frac-a2"], refs["frac-b"])
        assert both[refs["frac-a2"].uid].error == ""
        a2 = _spec(next(p for p in l40s.specs() if refs["frac-a2"].uid in p.name))
        assert _env(a2["devices"][0]["containerEdits"])["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] == "20"
        refused = both[refs["frac-b"].uid]
        assert "holds trust domain namespace=team-a" in refused.error and "namespace=team-b" in refused.error
        assert not refused.devices
        assert [c["call"] for c in l40s.mps_calls(gpu0)].count("start") == 1

        # A whole GPU and a time-sliced one: their UUIDs, no MPS.
        whole = (await kubelet.prepare(GPU, refs["whole-a"]))[refs["whole-a"].uid]
        sliced = (await kubelet.prepare(GPU, refs["sliced-a"]))[refs["sliced-a"].uid]
        assert whole.error == sliced.error == ""
        for ref, index in ((refs["whole-a"], 2), (refs["sliced-a"], 1)):
            spec = _spec(next(p for p in l40s.specs() if ref.uid in p.name))
            assert _env(spec["containerEdits"])["NVIDIA_VISIBLE_DEVICES"] == l40s.uuid(index)
            assert [n["path"] for n in spec["devices"][0]["containerEdits"]["deviceNodes"]] == [
                f"/dev/nvidia{index}"
            ]
            assert "env" not in spec["devices"][0]["containerEdits"]

        # A fractional GPU with another GPU in one claim cannot be served by one MPS daemon.
        mixed = (await kubelet.prepare(HAMI_DRIVER, refs["mixed-a"]))[refs["mixed-a"].uid]
        assert "may hold no other GPU" in mixed.error

        # A CPU device (or a NIC): checked, recorded, and no CDI device.
        specs = l40s.specs()
        cpus = (await kubelet.prepare("dra.cpu", refs["cpu-a"]))[refs["cpu-a"].uid]
        assert cpus.error == "" and [list(d.cdi_device_ids) for d in cpus.devices] == [[]]
        assert cpus.devices[0].device_name.startswith("cpudevnuma") and l40s.specs() == specs
        assert await kubelet.unprepare("dra.cpu", refs["cpu-a"]) == {refs["cpu-a"].uid: ""}

        # Foreign, malformed and stale claims.
        foreign = (await kubelet.prepare(GPU, refs["mig-a"]))[refs["mig-a"].uid]
        assert "allocated for another node, this is node kpl-00" in foreign.error
        stale = dra.Claim(namespace="team-a", name="whole-a", uid="00000000-0000-0000-0000-000000000000")
        assert "the kubelet asked for 00000000" in (await kubelet.prepare(GPU, stale))[stale.uid].error
        gone = dra.Claim(namespace="team-a", name="no-such-claim", uid="1")
        assert (await kubelet.prepare(GPU, gone))["1"].error == "claim team-a/no-such-claim: not found"
        malformed = dra.Claim(namespace="team-a", name="", uid="2")
        assert "all three are required" in (await kubelet.prepare(GPU, malformed))["2"].error

        # Out of order: unpreparing what was never prepared (or refused) succeeds.
        assert await kubelet.unprepare(HAMI_DRIVER, refs["frac-b"], refs["mig-a"]) == {
            refs["frac-b"].uid: "",
            refs["mig-a"].uid: "",
        }
        # The first share goes: its spec goes, the daemon stays for the second share.
        assert await kubelet.unprepare(HAMI_DRIVER, refs["frac-a"]) == {refs["frac-a"].uid: ""}
        assert not any(refs["frac-a"].uid in p.name for p in l40s.specs())
        assert l40s.daemon_pid(gpu0) is not None
        # The daemon dies while the plugin is down.
        pid = l40s.daemon_pid(gpu0)
        assert pid is not None
        os.kill(pid, signal.SIGKILL)

    # A reboot empties /var/run/cdi (a tmpfs); the checkpoint stays.
    whole_spec = next(p for p in l40s.specs() if refs["whole-a"].uid in p.name)
    written = whole_spec.read_text()
    whole_spec.unlink()
    # Restart: the checkpoint brings the prepared claims back, their spec and their daemon.
    checkpoint = json.loads((l40s.root / "state" / "checkpoint.json").read_text())
    assert sorted(c["name"] for c in checkpoint["claims"]) == ["frac-a2", "sliced-a", "whole-a"]
    assert [d["gpuUuid"] for d in checkpoint["mpsDaemons"]] == [gpu0]
    async with serving(l40s, plane) as (_, kubelet):
        assert [c["call"] for c in l40s.mps_calls(gpu0)].count("start") == 2
        assert whole_spec.read_text() == written
        assert l40s.daemon_pid(gpu0) is not None
        before = {p.name for p in l40s.specs()}
        repeated = (await kubelet.prepare(HAMI_DRIVER, refs["frac-a2"]))[refs["frac-a2"].uid]
        assert repeated.error == "" and [d.device_name for d in repeated.devices] == ["gpu-0"]
        assert {p.name for p in l40s.specs()} == before
        # The GPU's last fractional claim leaves: its daemon is told to quit.
        assert await kubelet.unprepare(HAMI_DRIVER, refs["frac-a2"]) == {refs["frac-a2"].uid: ""}
        assert l40s.mps_calls(gpu0)[-1]["call"] == "quit"
        assert l40s.daemon_pid(gpu0) is None and not (l40s.root / "mps" / gpu0 / "pipe").exists()
        # Now team-b may have the GPU.
        assert (await kubelet.prepare(HAMI_DRIVER, refs["frac-b"]))[refs["frac-b"].uid].error == ""
        for name in ("frac-b",):
            assert await kubelet.unprepare(HAMI_DRIVER, refs[name]) == {refs[name].uid: ""}
        for name in ("whole-a", "sliced-a"):
            assert await kubelet.unprepare(GPU, refs[name]) == {refs[name].uid: ""}
        assert l40s.specs() == []
        # Unprepared twice: still fine.
        assert await kubelet.unprepare(GPU, refs["whole-a"]) == {refs["whole-a"].uid: ""}
    assert json.loads((l40s.root / "state" / "checkpoint.json").read_text())["claims"] == []
    # Stopped: the kubelet finds no registration socket.
    assert not any((l40s.root / "reg").glob("*.sock"))

    async with serving(mig, plane) as (_, kubelet):
        # MIG: the MIG device's own UUID, its GPU's node and its capabilities' nodes.
        answer = (await kubelet.prepare(GPU, refs["mig-a"]))[refs["mig-a"].uid]
        assert answer.error == ""
        spec = _spec(mig.specs()[0])
        mig_device = mig.gpus.recorded.gpus[0].mig_devices[0]
        assert _env(spec["containerEdits"])["CUDA_VISIBLE_DEVICES"] == mig_device.uuid
        nodes = [n["path"] for n in spec["devices"][0]["containerEdits"]["deviceNodes"]]
        assert nodes == ["/dev/nvidia0", *mig_device.caps]
        # The allocated placement has no MIG device: refused, saying how to make one.
        missing = (await kubelet.prepare(GPU, refs["mig-missing"]))[refs["mig-missing"].uid]
        assert "no such MIG device exists" in missing.error and "nvidia-smi mig -cgi 19" in missing.error
        assert await kubelet.unprepare(GPU, refs["mig-a"]) == {refs["mig-a"].uid: ""}
        assert mig.specs() == []


def _agent_command(plane: ControlPlane, node: str, sysfs: Path, root: Path) -> list[str]:
    return [
        sys.executable, "-c", "from allot.cli.main import main; main()", "agent", "run", "--node-name", node,
        "--kubeconfig", str(plane.kubeconfig), "--sysfs-root", str(sysfs),
        "--from", str(Path(__file__).parents[1] / "recordings" / "pcie-l40s.yaml"), "--metrics-address", "",
        "--gpu-sharing", "0=shared", "--kubelet-plugin", f"--kubelet-registry-dir={root / 'reg'}",
        f"--kubelet-plugins-dir={root / 'plugins'}", f"--cdi-dir={root / 'cdi'}", f"--state-dir={root / 'state'}",
        f"--mps-dir={root / 'mps'}", f"--mps-control={FAKE_MPS}", "--mps-shm=shared",
    ]  # fmt: skip


def test_allot_agent_run_serves_the_kubelet_until_sigterm(
    control_plane: ControlPlane, tmp_path: Path, short_root: Path
) -> None:
    plane = control_plane
    node = "kpc-00"
    _ready_node(plane, node)
    sysfs, _ = machine(tmp_path, "pcie-l40s", node, "pcie-l40s.yaml")
    plane.apply("apiVersion: v1\nkind: Namespace\nmetadata: {name: team-c}\n")
    plane.apply(json.dumps(_claim("team-c", "unallocated", [_request("gpu", HAMI_DRIVER)])))
    command = _agent_command(plane, node, sysfs, short_root)

    # A checkpoint that does not load: the agent says which file and stops (exit 1).
    (short_root / "state").mkdir()
    (short_root / "state" / "checkpoint.json").write_text("{not json")
    broken = CliRunner().invoke(cli, command[3:])
    assert broken.exit_code == 1, broken.output
    assert (
        broken.stderr.strip()
        .splitlines()[-1]
        .startswith(f"error: kubelet plugin: {short_root / 'state' / 'checkpoint.json'}: not JSON")
    )
    (short_root / "state" / "checkpoint.json").unlink()

    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        eventually(
            lambda: len(list((short_root / "reg").glob("*-reg.sock"))) == 4, what="4 registration sockets"
        )

        async def kubelet_side() -> dra.NodePrepareResourceResponse:
            kubelet = Kubelet.empty(short_root / "reg")
            for driver in DRIVERS:
                info = await kubelet.register(driver)
                assert info.endpoint == str(short_root / "plugins" / driver / "dra.sock")
            ref = claim_ref(plane, "team-c", "unallocated")
            return (await kubelet.prepare(HAMI_DRIVER, ref))[ref.uid]

        assert asyncio.run(kubelet_side()).error == "claim team-c/unallocated: not allocated"
        process.send_signal(signal.SIGTERM)
        assert process.wait(30) == 0, process.stderr.read() if process.stderr else ""
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()
    # The kubelet deregisters a plugin whose registration socket is gone.
    assert list((short_root / "reg").glob("*.sock")) == []
