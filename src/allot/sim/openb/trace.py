"""Reading the openb CSVs (nodes and all four pod-list flavours) into plain rows.

The shipped files live gzip-compressed in `data/` (see its README for the
attribution and SHA256SUMS); `open_text` reads a shipped trace by its short
name (`default`, `cpu050`, `multigpu20` ...) or file name, or any CSV path
(compressed or not). Pod lists come in two column sets: the eleven columns
of most files and the five of the `multigpu*` files; the rows carry what
the scheduler needs either way, and the other columns when present.
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import io
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

NODE_FILE = "openb_node_list_gpu_node.csv"
POD_PREFIX = "openb_pod_list_"
# The paper's 17 traces (research/sharing.md 1.6), in the order of its figures.
EXPERIMENT_TRACES = (
    "default",
    "cpu050",
    "cpu100",
    "cpu200",
    "cpu250",
    "gpushare40",
    "gpushare60",
    "gpushare80",
    "gpushare100",
    "gpuspec10",
    "gpuspec20",
    "gpuspec25",
    "gpuspec33",
    "multigpu20",
    "multigpu30",
    "multigpu40",
    "multigpu50",
)
NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")
POD_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli")


class TraceError(ValueError):
    """A trace that cannot be read; the message names the file and, where it applies, the line."""


@dataclass(frozen=True, slots=True)
class OpenbNode:
    name: str
    cpu_milli: int
    memory_mib: int
    gpus: int
    model: str


@dataclass(frozen=True, slots=True)
class OpenbPod:
    name: str
    cpu_milli: int
    memory_mib: int
    num_gpu: int
    gpu_milli: int
    gpu_spec: tuple[str, ...] = ()
    qos: str = ""
    phase: str = ""
    creation_time: int | None = None
    deletion_time: int | None = None
    scheduled_time: int | None = None

    @property
    def gpu_request_milli(self) -> int:
        """The pod's whole GPU request in milli-GPUs (num_gpu x gpu_milli)."""
        return self.num_gpu * self.gpu_milli


def _data_file(name: str) -> Path | None:
    root = resources.files(__package__).joinpath("data")
    candidate = root.joinpath(name + ".gz")
    return Path(str(candidate)) if candidate.is_file() else None


def shipped_file(trace: str) -> Path:
    """The gzip file of a shipped trace: `default`, `openb_pod_list_default`, or the CSV's file name."""
    name = (
        trace
        if trace.endswith(".csv")
        else (trace if trace.startswith("openb_") else POD_PREFIX + trace) + ".csv"
    )
    found = _data_file(name)
    if found is None:
        raise TraceError(f"{trace}: not a shipped openb trace (give a path to a CSV instead)")
    return found


def open_text(source: str | Path) -> tuple[str, str]:
    """(where, text) of a shipped trace name or a CSV path (`.gz` decompressed)."""
    path = Path(source)
    if not path.exists():
        path = shipped_file(str(source))
    raw = path.read_bytes()
    if path.suffix == ".gz":
        raw = gzip.decompress(raw)
    try:
        return str(path), raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise TraceError(f"{path}: not UTF-8 text ({err})") from None


def sha256_of_shipped(name: str) -> str:
    """Digest of a shipped file after decompression (what SHA256SUMS lists)."""
    found = _data_file(name)
    if found is None:
        raise TraceError(f"{name}: not shipped")
    return hashlib.sha256(gzip.decompress(found.read_bytes())).hexdigest()


def shipped_checksums() -> dict[str, str]:
    text = resources.files(__package__).joinpath("data", "SHA256SUMS").read_text(encoding="utf-8")
    sums: dict[str, str] = {}
    for line in text.splitlines():
        digest, _, name = line.partition("  ")
        if digest and name:
            sums[name.strip()] = digest
    return sums


def _rows(where: str, text: str, required: Iterable[str]) -> list[tuple[int, dict[str, str]]]:
    reader = csv.DictReader(io.StringIO(text))
    missing = [c for c in required if c not in (reader.fieldnames or ())]
    if missing:
        raise TraceError(f"{where}: missing column(s) {', '.join(missing)}; header is {reader.fieldnames}")
    return [(index + 2, row) for index, row in enumerate(reader)]


def _int(where: str, line: int, row: dict[str, str], column: str, *, optional: bool = False) -> int | None:
    raw = (row.get(column) or "").strip()
    if not raw:
        if optional:
            return None
        raise TraceError(f"{where}:{line}: {column} is empty, expected an integer")
    try:
        value = int(float(raw))
    except (ValueError, OverflowError):  # OverflowError: infinity
        raise TraceError(f"{where}:{line}: {column}={raw!r} is not a number") from None
    if value < 0:
        raise TraceError(f"{where}:{line}: {column}={raw!r} is negative")
    return value


def read_nodes(source: str | Path = NODE_FILE) -> list[OpenbNode]:
    """The node list (`sn,cpu_milli,memory_mib,gpu,model`), in file order."""
    where, text = open_text(source)
    nodes: list[OpenbNode] = []
    for line, row in _rows(where, text, NODE_COLUMNS):
        nodes.append(
            OpenbNode(
                name=row["sn"],
                cpu_milli=_int(where, line, row, "cpu_milli") or 0,
                memory_mib=_int(where, line, row, "memory_mib") or 0,
                gpus=_int(where, line, row, "gpu") or 0,
                model=(row.get("model") or "").strip(),
            )
        )
    return nodes


def read_pods(source: str | Path = "default") -> list[OpenbPod]:
    """A pod list, either column set, in file order."""
    where, text = open_text(source)
    pods: list[OpenbPod] = []
    for line, row in _rows(where, text, POD_COLUMNS):
        spec = tuple(s for s in (row.get("gpu_spec") or "").split("|") if s)
        pods.append(
            OpenbPod(
                name=row["name"],
                cpu_milli=_int(where, line, row, "cpu_milli") or 0,
                memory_mib=_int(where, line, row, "memory_mib") or 0,
                num_gpu=_int(where, line, row, "num_gpu") or 0,
                gpu_milli=_int(where, line, row, "gpu_milli") or 0,
                gpu_spec=spec,
                qos=row.get("qos") or "",
                phase=row.get("pod_phase") or "",
                creation_time=_int(where, line, row, "creation_time", optional=True),
                deletion_time=_int(where, line, row, "deletion_time", optional=True),
                scheduled_time=_int(where, line, row, "scheduled_time", optional=True),
            )
        )
    return pods
