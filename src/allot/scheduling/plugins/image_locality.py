"""ImageLocality: prefer nodes that already hold the pod's images, as kube-scheduler v1.36 scores it.

Each image of the pod (its containers', init containers' and image volumes') that a node
lists in `status.images` adds its size scaled by the share of nodes holding it
(size × nodes with it / all nodes), so an image on one node out of many does not pull every
pod there. The sum is clamped to [23 MiB, 1000 MiB × containers] (containers and init
containers) and scaled to 0-100. Image names are compared as written, with `:latest` added
to a pod's image that has no tag, as upstream does.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from allot.cluster.nodes import NodeTable
from allot.model.core import Pod
from allot.scheduling.framework import Cycle, FloatArray, IntArray

NAME = "ImageLocality"
MB = 1024 * 1024
MIN_THRESHOLD = 23 * MB
MAX_CONTAINER_THRESHOLD = 1000 * MB


def normalized_image_name(name: str) -> str:
    """The CRI name upstream looks an image up by: `:latest` added when there is no tag."""
    if name.rfind(":") <= name.rfind("/"):
        return name + ":latest"
    return name


def pod_images(pod: Pod) -> list[str]:
    spec = pod.spec
    images = [c.image for c in spec.init_containers] + [c.image for c in spec.containers]
    images += [v.image.reference for v in spec.volumes if v.image is not None]
    return [normalized_image_name(i) for i in images]


@dataclass(slots=True)
class _Images:
    """Per image name: its size (from the first node listing it) and which nodes hold it."""

    size: dict[str, int] = field(default_factory=dict)
    holders: dict[str, list[int]] = field(default_factory=dict)


def _images(table: NodeTable) -> _Images:
    found = _Images()
    for info in table.infos:
        for image in info.node.status.images:
            for name in image.names:
                found.size.setdefault(name, image.size_bytes)
                holders = found.holders.setdefault(name, [])
                if not holders or holders[-1] != info.index:
                    holders.append(info.index)
    return found


class ImageLocality:
    name = NAME

    def __init__(self) -> None:
        self._cache: tuple[object, _Images] | None = None

    def _for(self, table: NodeTable) -> _Images:
        if self._cache is None or self._cache[0] is not table:
            self._cache = (table, _images(table))
        return self._cache[1]

    def score(self, cycle: Cycle, nodes: IntArray) -> FloatArray:
        table = cycle.state.nodes
        images = self._for(table)
        pod = cycle.pod.pod
        if not images.holders:
            # No node lists an image: every node scores 0.
            return np.zeros(nodes.size)
        total = np.zeros(table.size, dtype=np.int64)
        for name in pod_images(pod):
            holders = images.holders.get(name)
            if not holders:
                continue
            scaled = int(float(images.size[name]) * (len(holders) / table.size))
            total[holders] += scaled
        containers = len(pod.spec.containers) + len(pod.spec.init_containers)
        ceiling = MAX_CONTAINER_THRESHOLD * max(containers, 1)
        clamped = np.clip(total[nodes], MIN_THRESHOLD, ceiling)
        result: FloatArray = ((100 * (clamped - MIN_THRESHOLD)) // (ceiling - MIN_THRESHOLD)).astype(
            np.float64
        )
        return result
