"""Tie-breaks among equally good nodes: deterministic, yet favouring no node.

kube-scheduler picks uniformly at random among the nodes with the top score
(and among equally good preemption candidates, whichever it met first). A
fixed order (the node index, i.e. name order) would send every small pod
to the first nodes and block whole-node requests there. allot keeps the
same input giving the same output by ranking tied nodes with a key derived
from a stable hash of (seed, pod, node): for one pod the keys order the
nodes as a pseudo-random permutation, and another pod, or another seed,
gets an unrelated one.

The seed comes from the caller (the engine's `seed`, `allot simulate
--seed`); the default is 0. Hashes are BLAKE2b of the UTF-8 names, mixed
with SplitMix64's finaliser, so they do not depend on Python's hash
randomisation or the platform.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

import numpy as np
import numpy.typing as npt

KeyArray = npt.NDArray[np.uint64]

_MIX_1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX_2 = np.uint64(0x94D049BB133111EB)
_SHIFT_1 = np.uint64(30)
_SHIFT_2 = np.uint64(27)
_SHIFT_3 = np.uint64(31)


def stable_hash(text: str) -> int:
    """A 64-bit hash of `text` that is the same on every run and machine."""
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")


def node_hashes(names: Iterable[str]) -> KeyArray:
    """Each node's hash, by index; computed once per node table."""
    return np.array([stable_hash(name) for name in names], dtype=np.uint64)


def pod_hash(seed: int, pod_key: str) -> np.uint64:
    return np.uint64(stable_hash(f"{seed}/{pod_key}"))


def tie_keys(pod: np.uint64, nodes: KeyArray) -> KeyArray:
    """The pod's tie-break key for each node (lower wins): SplitMix64 of the two hashes combined."""
    with np.errstate(over="ignore"):
        z = nodes ^ pod
        z = (z ^ (z >> _SHIFT_1)) * _MIX_1
        z = (z ^ (z >> _SHIFT_2)) * _MIX_2
        mixed: KeyArray = z ^ (z >> _SHIFT_3)
    return mixed


def tie_key(seed: int, pod_key: str, node_name: str) -> int:
    """`tie_keys` for one node, as a Python int."""
    nodes = np.array([stable_hash(node_name)], dtype=np.uint64)
    return int(tie_keys(pod_hash(seed, pod_key), nodes)[0])
