"""`allot agent discover|run`: the node agent that publishes a node's GPUs, NICs and CPUs.

`discover` prints the ResourceSlices the agent would publish for this
machine (no cluster needed); `--record FILE` saves what NVML and sysfs
said, `--from FILE` replays such a recording. `run` publishes them to the
API server and keeps them true (docs/agent.md).
"""

from __future__ import annotations

import asyncio
import logging
import re
import socket
from pathlib import Path
from typing import Any, cast

import click

from allot.agent import inventory
from allot.agent.node import CONFIGURABLE_MODES, AgentConfig, GpuMode
from allot.agent.slices import all_slices, build_pools
from allot.agent.sources import Sources, open_sources
from allot.cli.exits import EXIT_BAD_INPUT
from allot.cli.kubeconfig import config_errors, describe
from allot.cli.params import FilePath
from allot.model.codec import dump_json, dump_yaml
from allot.model.presets.devices import CPU_DRIVER, GPU_DRIVER, NIC_DRIVER
from allot.model.presets.gpu_sharing import HAMI_DRIVER
from allot.report.files import write_atomically
from allot.scheduling.sharing.domains import TrustDomain, parse_trust_domain

_DURATION = re.compile(r"^(\d+(?:\.\d+)?)(ms|s|m|h)?$")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}


def _duration(ctx: click.Context, param: click.Parameter, value: str) -> float:
    match = _DURATION.match(value.strip())
    if match is None:
        raise click.BadParameter(f"expected a duration like 30s, 5m or 90, got {value!r}")
    return float(match.group(1)) * _UNITS[match.group(2)]


def _sharing(entries: tuple[str, ...]) -> tuple[GpuMode, dict[str, GpuMode]]:
    default: GpuMode = "whole"
    per_gpu: dict[str, GpuMode] = {}
    for entry in entries:
        gpu, _, mode = entry.rpartition("=")
        if mode not in CONFIGURABLE_MODES:
            raise click.BadParameter(
                f"{entry!r}: expected MODE or GPU=MODE with MODE one of {', '.join(CONFIGURABLE_MODES)} "
                "(MIG follows the GPU's MIG mode)",
                param_hint="--gpu-sharing",
            )
        if gpu:
            per_gpu[gpu] = mode
        else:
            default = mode
    return default, per_gpu


def _machine_options(function: Any) -> Any:
    options = [
        click.option("--sysfs-root", type=FilePath(file_okay=False, path_type=Path), default=Path("/sys"),
                     show_default=True, help="Where sysfs is mounted (/host/sys in the DaemonSet)."),
        click.option("--proc-root", type=FilePath(file_okay=False, path_type=Path), default=Path("/proc"),
                     show_default=True, help="Where procfs is mounted (MIG capability device nodes)."),
        click.option("--from", "replay", type=FilePath(dir_okay=False, path_type=Path),
                     help="Replay a recording: its `gpus` replace NVML, its `host` replaces sysfs."),
        click.option("--gpu-sharing", multiple=True, metavar="[GPU=]MODE",
                     help="Sharing mode of non-MIG GPUs (whole, time-sliced, shared); GPU is an index or UUID. "
                     "Repeatable; MIG GPUs are always published as MIG."),
        click.option("--time-slicing-replicas", type=click.IntRange(min=1), default=4, show_default=True),
        click.option("--nics", type=click.Choice(["rdma", "all"]), default="rdma", show_default=True,
                     help="Publish NICs with an RDMA device only, or every physical network function."),
        click.option("--exclude-nics", multiple=True, metavar="PATTERN",
                     help="Never publish interfaces or RDMA devices matching this shell pattern (the node's "
                     "primary network). Repeatable."),
        click.option("--pci-ids", type=FilePath(dir_okay=False, path_type=Path),
                     help="pci.ids database for NIC names (default: the system's)."),
    ]  # fmt: skip
    for option in reversed(options):
        function = option(function)
    return function


def _open(sysfs_root: Path, proc_root: Path, replay: Path | None) -> Sources:
    recording = None
    if replay is not None:
        try:
            recording = inventory.load(replay)
        except inventory.RecordingError as err:
            click.echo(f"error: {err}", err=True)
            raise SystemExit(EXIT_BAD_INPUT) from None
    return open_sources(sysfs_root=sysfs_root, proc_root=proc_root, recording=recording)


def _config(
    gpu_sharing: tuple[str, ...],
    replicas: int,
    nics: str,
    exclude_nics: tuple[str, ...],
    pci_ids: Path | None,
) -> AgentConfig:
    default, per_gpu = _sharing(gpu_sharing)
    return AgentConfig(
        default_sharing=default, sharing=per_gpu, replicas=replicas, nics=cast(Any, nics),
        exclude_nics=exclude_nics, pci_ids=pci_ids,
    )  # fmt: skip


def _trust_domain(ctx: click.Context, param: click.Parameter, value: str) -> TrustDomain:
    try:
        return parse_trust_domain(value)
    except ValueError as err:
        raise click.BadParameter(str(err)) from None


def _kubelet_options(function: Any) -> Any:
    drivers = (GPU_DRIVER, HAMI_DRIVER, NIC_DRIVER, CPU_DRIVER)
    folder = FilePath(file_okay=False, path_type=Path)
    options = [
        click.option("--kubelet-plugin", is_flag=True,
                     help="Also serve the kubelet's DRA plugin API: prepare allocated claims (CDI specs, MPS)."),
        click.option("--kubelet-registry-dir", type=folder, default=Path("/var/lib/kubelet/plugins_registry"),
                     show_default=True, help="The kubelet's plugin watcher folder (registration sockets)."),
        click.option("--kubelet-plugins-dir", type=folder, default=Path("/var/lib/kubelet/plugins"),
                     show_default=True, help="Where each driver's DRA socket goes (<dir>/<driver>/dra.sock)."),
        click.option("--cdi-dir", type=folder, default=Path("/var/run/cdi"), show_default=True,
                     help="Where the container runtime reads CDI specs."),
        click.option("--state-dir", type=folder, default=Path("/var/lib/kubelet/plugins/allot-agent"),
                     show_default=True, help="The plugin's checkpoint of prepared claims."),
        click.option("--mps-dir", type=folder, default=Path("/run/allot/mps"), show_default=True,
                     help="MPS daemons' pipe, log and shared-memory folders, one folder per GPU (a host path)."),
        click.option("--mps-shm", type=click.Choice(["private", "shared"]), default="private", show_default=True,
                     help="private: each GPU's MPS daemon gets its own /dev/shm (needs CAP_SYS_ADMIN); "
                     "shared: the agent's /dev/shm."),
        click.option("--mps-control", default="nvidia-cuda-mps-control", show_default=True,
                     help="The MPS control command."),
        click.option("--trust-domain", default="namespace", show_default=True, callback=_trust_domain,
                     help="Who may share a GPU without memory isolation: namespace, localQueue, any or "
                     "label:<key>; the scheduler's GpuIsolation setting."),
        click.option("--nvidia-cdi-kind", default="", metavar="KIND",
                     help="Also hand the runtime KIND=<UUID> per GPU from the NVIDIA container toolkit's CDI "
                     "spec (e.g. nvidia.com/gpu, generated with --device-name-strategy=uuid)."),
        click.option("--plugin-driver", "plugin_drivers", multiple=True, type=click.Choice(drivers),
                     help="Register only these drivers with the kubelet (repeatable) [default: all four]."),
    ]  # fmt: skip
    for option in reversed(options):
        function = option(function)
    return function


@click.group()
def agent() -> None:
    """The node agent: discover GPUs, NICs and CPUs and publish them as ResourceSlices."""


@agent.command()
@click.option("--node-name", envvar="NODE_NAME", help="The node's name [default: this host's name].")
@_machine_options
@click.option(
    "--record", type=FilePath(dir_okay=False, path_type=Path), help="Also save the raw inventory here."
)
@click.option("-o", "--output", type=click.Choice(["yaml", "json"]), default="yaml", show_default=True)
def discover(
    node_name: str | None, sysfs_root: Path, proc_root: Path, replay: Path | None, gpu_sharing: tuple[str, ...],
    time_slicing_replicas: int, nics: str, exclude_nics: tuple[str, ...], pci_ids: Path | None, record: Path | None,
    output: str,
) -> None:  # fmt: skip
    """Print the ResourceSlices this machine would publish; nothing is sent anywhere."""
    config = _config(gpu_sharing, time_slicing_replicas, nics, exclude_nics, pci_ids)
    sources = _open(sysfs_root, proc_root, replay)
    try:
        node = node_name or socket.gethostname()
        devices = sources.devices(node, config)
        if record is not None:
            text = inventory.to_yaml(sources.record(f"recorded by `allot agent discover` on node {node}"))
            try:
                write_atomically(record, text.encode("utf-8"))
            except OSError as err:
                click.echo(f"error: {record}: cannot write: {err.strerror}", err=True)
                raise SystemExit(EXIT_BAD_INPUT) from None
    finally:
        sources.close()
    for problem in devices.problems:
        click.echo(f"warning: {problem}", err=True)
    slices = all_slices(build_pools(devices, replicas=config.replicas))
    click.echo(dump_yaml(slices) if output == "yaml" else dump_json(slices), nl=output == "json")
    counts = f"{len(devices.gpus)} GPUs, {len(devices.nics)} NICs, {len(devices.cpus)} NUMA nodes"
    click.echo(f"node {node}: {counts} in {len(slices)} ResourceSlices", err=True)


@agent.command()
@click.option(
    "--node-name",
    envvar="NODE_NAME",
    required=True,
    help="The node's name (the downward API's spec.nodeName).",
)
@_machine_options
@click.option("--kubeconfig", type=FilePath(dir_okay=False, path_type=Path),
              help="Default: the pod's service account, else ~/.kube/config.")  # fmt: skip
@click.option("--qps", type=click.FloatRange(min=0.1), default=5.0, show_default=True)
@click.option("--burst", type=click.IntRange(min=1), default=10, show_default=True)
@click.option(
    "--resync",
    default="5m",
    show_default=True,
    callback=_duration,
    help="Full re-read of NVML and the server.",
)
@click.option(
    "--poll", default="5s", show_default=True, callback=_duration, help="Health poll (GPU status, NIC links)."
)
@click.option("--settle", default="30s", show_default=True, callback=_duration,
              help="Time after an XID before the driver's 'no recovery needed' may clear its taint.")  # fmt: skip
@click.option(
    "--metrics-address", default=":9464", show_default=True, help='host:port for /metrics; "" for none.'
)
@click.option("-v", "--verbose", is_flag=True, help="Log every publish.")
@_kubelet_options
def run(
    node_name: str, sysfs_root: Path, proc_root: Path, replay: Path | None, gpu_sharing: tuple[str, ...],
    time_slicing_replicas: int, nics: str, exclude_nics: tuple[str, ...], pci_ids: Path | None,
    kubeconfig: Path | None, qps: float, burst: int,
    resync: float, poll: float, settle: float, metrics_address: str, verbose: bool,
    kubelet_plugin: bool, kubelet_registry_dir: Path, kubelet_plugins_dir: Path, cdi_dir: Path, state_dir: Path,
    mps_dir: Path, mps_shm: str, mps_control: str, trust_domain: TrustDomain, nvidia_cdi_kind: str,
    plugin_drivers: tuple[str, ...],
) -> None:  # fmt: skip
    """Publish this node's devices and keep them true until SIGTERM (the slices stay); with
    --kubelet-plugin also prepare the claims the kubelet hands over (docs/kubelet-plugin.md)."""
    try:  # the API client, metrics and gRPC come with the `agent` extra; `discover` needs none
        from allot.agent.client import make_client
        from allot.agent.kubelet.plugin import PluginOptions, PluginStartError
        from allot.agent.runner import AgentOptions
        from allot.agent.service import serve
    except ImportError as err:
        click.echo(f"error: {err.name} is missing: pip install 'allot[agent]'", err=True)
        raise SystemExit(EXIT_BAD_INPUT) from None
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    config = _config(gpu_sharing, time_slicing_replicas, nics, exclude_nics, pci_ids)
    sources = _open(sysfs_root, proc_root, replay)
    try:
        api = make_client(kubeconfig, qps=qps, burst=burst)
    except config_errors() as err:
        sources.close()
        click.echo(f"error: no API server configuration: {describe(err)}", err=True)
        raise SystemExit(EXIT_BAD_INPUT) from None
    options = AgentOptions(node=node_name, config=config, resync=resync, poll=poll, settle=settle)
    kubelet = None
    if kubelet_plugin:
        kubelet = PluginOptions(
            cdi_dir=cdi_dir, state_dir=state_dir, registry_dir=kubelet_registry_dir, plugins_dir=kubelet_plugins_dir,
            mps_dir=mps_dir, mps_control=mps_control, mps_private_shm=mps_shm == "private",
            trust_domain=trust_domain, toolkit_cdi_kind=nvidia_cdi_kind,
            drivers=plugin_drivers or PluginOptions().drivers,
        )  # fmt: skip
    try:
        asyncio.run(serve(api, sources, options, metrics_address=metrics_address, kubelet=kubelet))
    except PluginStartError as err:
        click.echo(f"error: kubelet plugin: {err}", err=True)
        raise SystemExit(EXIT_BAD_INPUT) from None
