"""Bound pods as inter-pod affinity, topology spreading and host ports need them: counted per node.

kube-scheduler answers "how many pods matching this selector run in each topology domain"
by walking every pod of every node in each scheduling cycle. Here the answers are kept:

* **matchers**: for a set of (namespaces, label selector) conditions, how many bound pods
  on each node satisfy all of them. A matcher is built from the bound pods the first time a
  pod asks for it and then kept current as pods are bound and unbound, so a cycle costs one
  array per selector instead of a walk over all pods. Pods of one Deployment share their
  selectors, so few matchers exist; the least recently used are dropped past a bound.
* **terms**: the inter-pod affinity terms of bound pods (required and preferred, affinity
  and anti-affinity), each distinct term with the number of pods (or the sum of weights)
  carrying it on each node. An incoming pod is checked against the distinct terms, not
  against every pod that has them.
* **host ports** in use per node, and how many bound pods use each PersistentVolumeClaim.

Everything is updated by the state's pod listener, which runs on every bind and unbind and
on their undo, so what-ifs rolled back by the journal leave the index as it was. A node
table that is replaced (a live cluster's nodes changed) empties the index; it is rebuilt
from the bound pods on the next question.
"""

from __future__ import annotations

import enum
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

import msgspec
import numpy as np
import numpy.typing as npt

from allot.cluster.selectors import label_selector_matches
from allot.model.base import LabelSelector
from allot.model.core import ContainerPort, Pod, PodAffinity, PodAffinityTerm

if TYPE_CHECKING:
    from allot.cluster.nodes import NodeTable
    from allot.cluster.pod_info import PodInfo


class PodSource(Protocol):
    """What the index reads of the cluster state: its pods, its node table, its bound pods, and
    the listeners it calls on every bind and unbind."""

    pod_listeners: list[Callable[[PodInfo, int], None]]

    @property
    def pods(self) -> Mapping[str, PodInfo]: ...

    @property
    def nodes(self) -> NodeTable: ...

    def bound(self) -> Iterable[PodInfo]: ...


IntArray = npt.NDArray[np.int64]

# The wildcard host IP: a port taken on it conflicts with the same port on every IP.
ANY_HOST_IP = "0.0.0.0"
# Matchers kept at most; the least recently used go first.
MAX_MATCHERS = 512

_encoder = msgspec.msgpack.Encoder()


# A label every pod a selector matches must carry: only pods with it are ever checked against it.
Anchor = tuple[str, str]


def anchor_of(selector: LabelSelector | None) -> Anchor | None:
    """One label pair a selector requires (a matchLabels entry, or an In with one value), if any."""
    if selector is None:
        return None
    if selector.match_labels:
        key = min(selector.match_labels)
        return (key, selector.match_labels[key])
    for requirement in selector.match_expressions:
        if requirement.operator == "In" and len(requirement.values) == 1:
            return (requirement.key, requirement.values[0])
    return None


def selector_label_keys(selector: LabelSelector | None) -> set[str]:
    """The label keys a selector reads."""
    if selector is None:
        return set()
    keys = set(selector.match_labels)
    keys.update(e.key for e in selector.match_expressions)
    return keys


def selector_key(selector: LabelSelector | None) -> bytes:
    """Identifies a selector by value (None, selecting nothing, differs from empty, selecting all)."""
    return b"" if selector is None else b"s" + _encoder.encode(selector)


# --- matchers -------------------------------------------------------------------------------

# One condition: the namespaces a pod must be in (None: any) and the selector its labels must match.
Condition = tuple[frozenset[str] | None, LabelSelector | None]


@dataclass(frozen=True, slots=True)
class Matcher:
    """Pods that satisfy every condition (kube-scheduler's "matches all terms")."""

    conditions: tuple[Condition, ...]
    # PodTopologySpread does not count pods being deleted; InterPodAffinity does.
    skip_terminating: bool = False
    key: bytes = field(default=b"", compare=False)

    @classmethod
    def of(cls, conditions: Sequence[Condition], *, skip_terminating: bool = False) -> Matcher:
        parts = [b"t" if skip_terminating else b"f"]
        for namespaces, selector in conditions:
            names = b"*" if namespaces is None else b"\x00".join(n.encode() for n in sorted(namespaces))
            parts.append(names + b"\x01" + selector_key(selector))
        return cls(tuple(conditions), skip_terminating, b"\x02".join(parts))

    @property
    def anchor(self) -> Anchor | None:
        for _, selector in self.conditions:
            found = anchor_of(selector)
            if found is not None:
                return found
        return None

    def matches(self, pod: Pod) -> bool:
        if not self.conditions:
            return False
        if self.skip_terminating and pod.metadata.deletion_timestamp is not None:
            return False
        labels = pod.metadata.labels
        namespace = pod.metadata.namespace
        for namespaces, selector in self.conditions:
            if namespaces is not None and namespace not in namespaces:
                return False
            if not label_selector_matches(selector, labels):
                return False
        return True


# --- the terms bound pods carry ---------------------------------------------------------------


class TermKind(enum.Enum):
    REQUIRED_AFFINITY = "required affinity"
    REQUIRED_ANTI_AFFINITY = "required anti-affinity"
    PREFERRED_AFFINITY = "preferred affinity"
    PREFERRED_ANTI_AFFINITY = "preferred anti-affinity"


@dataclass(frozen=True, slots=True)
class AffinityTerm:
    """A pod affinity term as its owner means it: which pods it selects, over which topology."""

    # The namespaces it names, or its owner's namespace when it names none and has no selector.
    namespaces: frozenset[str]
    namespace_selector: LabelSelector | None
    selector: LabelSelector | None
    topology_key: str

    @classmethod
    def of(cls, term: PodAffinityTerm, owner_namespace: str) -> AffinityTerm:
        if not term.namespaces and term.namespace_selector is None:
            namespaces = frozenset({owner_namespace})
        else:
            namespaces = frozenset(term.namespaces)
        return cls(namespaces, term.namespace_selector, term.label_selector, term.topology_key)

    @property
    def key(self) -> bytes:
        names = b"\x00".join(n.encode() for n in sorted(self.namespaces))
        return b"\x01".join(
            (
                names,
                selector_key(self.namespace_selector),
                selector_key(self.selector),
                self.topology_key.encode(),
            )
        )

    def matches(self, pod: Pod, namespace_labels: Mapping[str, str]) -> bool:
        """kube-scheduler's AffinityTerm.Matches: in a named namespace, or one its namespace
        selector picks, and labels its selector picks."""
        if pod.metadata.namespace not in self.namespaces and not label_selector_matches(
            self.namespace_selector, namespace_labels
        ):
            return False
        return label_selector_matches(self.selector, pod.metadata.labels)


def _required(affinity: PodAffinity | None) -> tuple[PodAffinityTerm, ...]:
    return affinity.required_during_scheduling_ignored_during_execution if affinity is not None else ()


def pod_terms(pod: Pod) -> Iterator[tuple[TermKind, AffinityTerm, int]]:
    """The pod's inter-pod affinity terms: kind, term, and weight (1 for required ones)."""
    affinity = pod.spec.affinity
    if affinity is None:
        return
    namespace = pod.metadata.namespace
    for kind, group in (
        (TermKind.REQUIRED_AFFINITY, affinity.pod_affinity),
        (TermKind.REQUIRED_ANTI_AFFINITY, affinity.pod_anti_affinity),
    ):
        for term in _required(group):
            yield kind, AffinityTerm.of(term, namespace), 1
    for kind, group in (
        (TermKind.PREFERRED_AFFINITY, affinity.pod_affinity),
        (TermKind.PREFERRED_ANTI_AFFINITY, affinity.pod_anti_affinity),
    ):
        if group is None:
            continue
        for weighted in group.preferred_during_scheduling_ignored_during_execution:
            yield kind, AffinityTerm.of(weighted.pod_affinity_term, namespace), weighted.weight


def has_pod_affinity(pod: Pod) -> bool:
    affinity = pod.spec.affinity
    return affinity is not None and (
        affinity.pod_affinity is not None or affinity.pod_anti_affinity is not None
    )


# --- host ports and claims ----------------------------------------------------------------------

HostPort = tuple[str, str, int]


def host_ports(pod: Pod) -> list[ContainerPort]:
    """The ports the pod takes on its node: those with a hostPort, of its containers and of its
    sidecars (init containers that keep running), as kube-scheduler counts them."""
    ports: list[ContainerPort] = []
    for container in pod.spec.init_containers:
        if container.restart_policy == "Always":
            ports.extend(p for p in container.ports if p.host_port > 0)
    for container in pod.spec.containers:
        ports.extend(p for p in container.ports if p.host_port > 0)
    return ports


def port_key(port: ContainerPort) -> HostPort:
    return (port.host_ip or ANY_HOST_IP, port.protocol or "TCP", port.host_port)


def claim_names(pod: Pod) -> list[str]:
    """Keys (`namespace/name`) of the PersistentVolumeClaims the pod's volumes use, generic
    ephemeral volumes' claims (`<pod>-<volume>`) included."""
    names: list[str] = []
    for volume in pod.spec.volumes:
        if volume.persistent_volume_claim is not None:
            names.append(f"{pod.namespace}/{volume.persistent_volume_claim.claim_name}")
        elif volume.ephemeral is not None:
            names.append(f"{pod.namespace}/{pod.name}-{volume.name}")
    return names


# --- the index ------------------------------------------------------------------------------------


@dataclass(slots=True)
class _TermCounts:
    term: AffinityTerm
    per_node: IntArray
    total: int = 0


class _Anchored:
    """Keys filed under the label pair their selector requires, or among the general ones."""

    __slots__ = ("by_label", "general")

    def __init__(self) -> None:
        self.by_label: dict[Anchor, set[bytes]] = {}
        self.general: set[bytes] = set()

    def add(self, key: bytes, anchor: Anchor | None) -> None:
        if anchor is None:
            self.general.add(key)
        else:
            self.by_label.setdefault(anchor, set()).add(key)

    def remove(self, key: bytes, anchor: Anchor | None) -> None:
        if anchor is None:
            self.general.discard(key)
            return
        keys = self.by_label.get(anchor)
        if keys is not None:
            keys.discard(key)
            if not keys:
                del self.by_label[anchor]

    def candidates(self, labels: Mapping[str, str]) -> set[bytes]:
        """The keys whose selector a pod with these labels may match."""
        found = set(self.general)
        by_label = self.by_label
        if by_label:
            for pair in labels.items():
                keys = by_label.get(pair)
                if keys:
                    found |= keys
        return found


class PodIndex:
    """See the module docstring. Built by ClusterState; plugins only read it."""

    def __init__(self, state: PodSource, namespace_labels: Callable[[str], Mapping[str, str]]) -> None:
        self._state = state
        self.namespace_labels = namespace_labels
        self._table: object = None
        self._size = 0
        self._matchers: OrderedDict[bytes, tuple[Matcher, IntArray]] = OrderedDict()
        self._matcher_anchors = _Anchored()
        self._terms: dict[TermKind, dict[bytes, _TermCounts]] = {kind: {} for kind in TermKind}
        self._term_anchors: dict[TermKind, _Anchored] = {kind: _Anchored() for kind in TermKind}
        # Bound pods by each of their label pairs (a new matcher counts only pods with its anchor).
        self._by_label: dict[Anchor, set[str]] = {}
        self._ports: dict[int, Counter[HostPort]] = {}
        self._claims: Counter[str] = Counter()
        # Label keys the bound pods' required anti-affinity selectors read, and a number that
        # changes whenever that set may have (`anti_affinity_keys`).
        self._anti_keys: Counter[str] = Counter()
        self.anti_version = 0
        state.pod_listeners.append(self._on_pod)

    # -- questions ------------------------------------------------------------------------

    def count(self, matcher: Matcher) -> IntArray:
        """Bound pods satisfying `matcher`, per node index (do not modify the array)."""
        self._sync()
        found = self._matchers.get(matcher.key)
        if found is not None:
            self._matchers.move_to_end(matcher.key)
            return found[1]
        counts = np.zeros(self._size, dtype=np.int64)
        anchor = matcher.anchor
        pods = self._state.pods
        if anchor is None:
            candidates: Iterable[PodInfo] = self._state.bound()
        else:
            candidates = (pods[key] for key in self._by_label.get(anchor, ()))
        for info in candidates:
            if info.node is not None and matcher.matches(info.pod):
                counts[info.node] += 1
        self._matchers[matcher.key] = (matcher, counts)
        self._matcher_anchors.add(matcher.key, anchor)
        if len(self._matchers) > MAX_MATCHERS:
            key, (dropped, _) = self._matchers.popitem(last=False)
            self._matcher_anchors.remove(key, dropped.anchor)
        return counts

    def terms(self, kind: TermKind, pod: Pod | None = None) -> Iterable[tuple[AffinityTerm, IntArray]]:
        """The distinct terms of this kind that bound pods carry, each with per node the number of
        pods carrying it (required kinds) or the sum of their weights (preferred kinds); with
        `pod`, only those whose selector may match it (a label it requires is the pod's)."""
        self._sync()
        terms = self._terms[kind]
        if pod is None:
            return [(entry.term, entry.per_node) for entry in terms.values()]
        keys = self._term_anchors[kind].candidates(pod.metadata.labels)
        return [(terms[key].term, terms[key].per_node) for key in sorted(keys) if key in terms]

    def has_terms(self, kind: TermKind | None = None) -> bool:
        """Whether some bound pod carries a term of this kind (of any kind when None)."""
        self._sync()
        if kind is None:
            return any(self._terms.values())
        return bool(self._terms[kind])

    def anti_affinity_keys(self) -> frozenset[str]:
        """The label keys that bound pods' required anti-affinity selectors read: an incoming
        pod's other labels cannot make such a term reject it."""
        self._sync()
        return frozenset(self._anti_keys)

    def used_ports(self, node: int) -> Mapping[HostPort, int]:
        self._sync()
        return self._ports.get(node, {})

    def nodes_with_ports(self) -> list[int]:
        """Nodes where some bound pod takes a host port."""
        self._sync()
        return [node for node, used in self._ports.items() if used]

    def claim_users(self, claim_key: str) -> int:
        """How many bound pods use this PersistentVolumeClaim."""
        self._sync()
        return self._claims.get(claim_key, 0)

    # -- upkeep ---------------------------------------------------------------------------

    def _sync(self) -> None:
        table = self._state.nodes
        if table is self._table:
            return
        self._table = table
        self._size = table.size
        self._matchers.clear()
        self._matcher_anchors = _Anchored()
        self._terms = {kind: {} for kind in TermKind}
        self._term_anchors = {kind: _Anchored() for kind in TermKind}
        self._by_label = {}
        self._ports = {}
        self._claims = Counter()
        self._anti_keys = Counter()
        self.anti_version += 1
        for info in self._state.bound():
            self._apply(info.pod, info.node, +1, matchers=False)

    def _on_pod(self, info: PodInfo, sign: int) -> None:
        if self._state.nodes is not self._table:
            # Rebuilt from the bound pods at the next question, this change included.
            self._table = None
            return
        self._apply(info.pod, info.node, sign, matchers=True)

    def relabel(self, info: PodInfo, old: Pod) -> None:
        """A bound pod's record changed (labels, deletion): count it as it is now."""
        if self._state.nodes is not self._table or info.node is None:
            self._table = None
            return
        self._apply(old, info.node, -1, matchers=True)
        self._apply(info.pod, info.node, +1, matchers=True)

    def _apply(self, pod: Pod, node: int | None, sign: int, *, matchers: bool) -> None:
        if node is None:
            return
        labels = pod.metadata.labels
        if matchers and self._matchers:
            for key in self._matcher_anchors.candidates(labels):
                matcher, counts = self._matchers[key]
                if matcher.matches(pod):
                    counts[node] += sign
        pod_key = pod.key
        for pair in labels.items():
            holders = self._by_label.get(pair)
            if sign > 0:
                if holders is None:
                    holders = self._by_label[pair] = set()
                holders.add(pod_key)
            elif holders is not None:
                holders.discard(pod_key)
                if not holders:
                    del self._by_label[pair]
        if has_pod_affinity(pod):
            for kind, term, weight in pod_terms(pod):
                self._add_term(kind, term, node, sign * weight, sign)
        ports = host_ports(pod)
        if ports:
            used = self._ports.setdefault(node, Counter())
            for port in ports:
                used[port_key(port)] += sign
                if used[port_key(port)] <= 0:
                    del used[port_key(port)]
        if pod.spec.volumes:
            for claim in claim_names(pod):
                self._claims[claim] += sign
                if self._claims[claim] <= 0:
                    del self._claims[claim]

    def _add_term(self, kind: TermKind, term: AffinityTerm, node: int, amount: int, sign: int) -> None:
        terms = self._terms[kind]
        key = term.key
        entry = terms.get(key)
        if entry is None:
            entry = terms[key] = _TermCounts(term, np.zeros(self._size, dtype=np.int64))
            self._term_anchors[kind].add(key, anchor_of(term.selector))
            if kind is TermKind.REQUIRED_ANTI_AFFINITY:
                self._anti_keys.update(selector_label_keys(term.selector))
                self.anti_version += 1
        entry.per_node[node] += amount
        entry.total += sign
        if entry.total <= 0:
            del terms[key]
            self._term_anchors[kind].remove(key, anchor_of(term.selector))
            if kind is TermKind.REQUIRED_ANTI_AFFINITY:
                self._anti_keys.subtract(selector_label_keys(term.selector))
                self._anti_keys = +self._anti_keys
                self.anti_version += 1
