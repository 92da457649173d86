"""`allot preset NAME --nodes N`: print a preset's Nodes, ResourceSlices and DeviceClasses as manifests.

The output loads back with `allot validate` and can be fed to `allot place`
or `allot simulate` beside workload manifests. `allot preset --list` lists
the presets.
"""

from __future__ import annotations

import click
from rich.console import Console
from rich.table import Table

from allot.model.codec import dump_json, dump_yaml
from allot.model.presets.catalog import SHAPES, PresetError
from allot.model.presets.expand import expand_preset, preset_names
from allot.model.presets.slices import GPU_MODES


def _list() -> None:
    table = Table(title="hardware presets", title_justify="left")
    for column in ("name", "GPUs", "NICs", "CPUs", "description"):
        table.add_column(column)
    for name in preset_names():
        shape = SHAPES[name]
        table.add_row(name, str(len(shape.gpus)), str(len(shape.nics)), str(shape.cpus), shape.description)
    Console().print(table)


@click.command()
@click.argument("name", required=False)
@click.option("--list", "listing", is_flag=True, help="List the presets and exit.")
@click.option("--nodes", "-n", type=click.IntRange(min=1), default=1, show_default=True)
@click.option("--prefix", help="Node name prefix (default: the preset name).")
@click.option("--gpu-mode", type=click.Choice(GPU_MODES), default="whole", show_default=True)
@click.option(
    "--replicas", type=click.IntRange(min=1), default=4, show_default=True, help="Time-slicing replicas."
)
@click.option("--racks", type=click.IntRange(min=0), default=0, help="Spread the nodes over this many racks.")
@click.option(
    "--blocks", type=click.IntRange(min=0), default=0, help="Group the racks into this many blocks."
)
@click.option("--topology", "topology_name", help="Also print a Kueue Topology of this name.")
@click.option("--gpu-taint", is_flag=True, help="Taint the nodes nvidia.com/gpu=present:NoSchedule.")
@click.option("--no-classes", is_flag=True, help="Leave out the DeviceClasses.")
@click.option("-o", "--output", type=click.Choice(["yaml", "json"]), default="yaml", show_default=True)
def preset(
    name: str | None,
    listing: bool,
    nodes: int,
    prefix: str | None,
    gpu_mode: str,
    replicas: int,
    racks: int,
    blocks: int,
    topology_name: str | None,
    gpu_taint: bool,
    no_classes: bool,
    output: str,
) -> None:
    """Expand hardware preset NAME into Nodes and ResourceSlices as real drivers publish them."""
    if listing:
        _list()
        return
    if name is None:
        raise click.UsageError(f"give a preset name or --list; presets: {', '.join(preset_names())}")
    try:
        objects = expand_preset(
            name,
            nodes,
            name_prefix=prefix,
            gpu_mode=gpu_mode,
            replicas=replicas,
            racks=racks,
            blocks=blocks,
            gpu_taint=gpu_taint,
            classes=not no_classes,
            topology_name=topology_name,
        )
    except PresetError as err:
        raise click.BadParameter(str(err)) from None
    except NotImplementedError:
        raise click.UsageError(f"--gpu-mode {gpu_mode} is not available yet") from None
    click.echo(dump_yaml(objects) if output == "yaml" else dump_json(objects), nl=output == "json")
