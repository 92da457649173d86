"""Trust domains: which pods may share a GPU that has no memory isolation.

Fractional and time-sliced GPUs give every pod on them access to the same
device memory, so a pod can read what another left behind. allot therefore
lets such a GPU hold pods of one trust domain only. What a domain is, is
configured per scheduler profile (`GpuIsolation` plugin, `trustDomain`):

* `namespace` (default): pods of one namespace trust each other;
* `label:<key>`: the value of label `<key>` on the pod, else on its
  namespace (tenant labels usually sit on namespaces); pods with neither
  fall back to their namespace;
* `localQueue`: Kueue's LocalQueue, i.e. the namespace plus the pod's
  `kueue.x-k8s.io/queue-name` label (pods without it form one domain per
  namespace);
* `any`: no isolation.

MIG partitions are isolated in hardware and are never restricted.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from allot.cluster.pod_info import PodInfo
from allot.cluster.state import ClusterState

NAMESPACE = "namespace"
LABEL = "label"
LOCAL_QUEUE = "localQueue"
ANY = "any"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"


@dataclass(frozen=True, slots=True)
class TrustDomain:
    """How pods are grouped into trust domains."""

    kind: str = NAMESPACE
    label: str = ""

    @property
    def key(self) -> str:
        """Identifies the grouping (owner indexes are kept per key)."""
        return f"{self.kind}:{self.label}" if self.label else self.kind

    @property
    def isolates(self) -> bool:
        return self.kind != ANY

    def domain_of(self, state: ClusterState, info: PodInfo) -> str:
        pod = info.pod
        ns = state.namespaces.get(pod.namespace)
        return self.domain_for(
            pod.namespace, pod.metadata.labels, ns.metadata.labels if ns is not None else {}
        )

    def domain_for(
        self, namespace: str, pod_labels: Mapping[str, str], namespace_labels: Mapping[str, str]
    ) -> str:
        """The domain of a pod in `namespace` with these labels (and its namespace's): the
        scheduler asks it of its state, the kubelet plugin of the pods a claim is reserved for."""
        if self.kind == LABEL:
            value = pod_labels.get(self.label)
            if value is None:
                value = namespace_labels.get(self.label)
            return f"label={value}" if value is not None else f"namespace={namespace}"
        if self.kind == LOCAL_QUEUE:
            return f"queue={namespace}/{pod_labels.get(QUEUE_LABEL, '')}"
        return f"namespace={namespace}"


def parse_trust_domain(raw: Any) -> TrustDomain:
    """`namespace`, `any`, `localQueue`, `label:<key>` or `{type: label, label: <key>}`; raises ValueError."""
    if raw is None:
        return TrustDomain()
    if isinstance(raw, Mapping):
        kind = raw.get("type", NAMESPACE)
        label = raw.get("label", "")
    elif isinstance(raw, str):
        kind, _, label = raw.partition(":")
    else:
        raise ValueError(f"trustDomain: expected a string or a mapping, got {type(raw).__name__}")
    if kind == LABEL and not label:
        raise ValueError("trustDomain: label needs a key, e.g. label:example.com/tenant")
    if kind not in (NAMESPACE, LABEL, LOCAL_QUEUE, ANY) or (label and kind != LABEL):
        raise ValueError(f"trustDomain: unknown {raw!r}; expected namespace, localQueue, any or label:<key>")
    return TrustDomain(kind, label)
