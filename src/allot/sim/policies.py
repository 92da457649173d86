"""Named policy bundles: how the engine orders, admits and places work in a simulation.

A policy is what `--compare` names. Built in:

| name | ordering and admission | placement |
|---|---|---|
| `fifo-priority` | kube-scheduler: priority, then arrival; queue labels ignored; default preemption | default profile |
| `kueue` | Kueue admission, classic preemption, no fair sharing | default profile |
| `fair` | Kueue admission with fair sharing (DRS tournament, fair-sharing preemption), quota holds | allot's profile: default + GpuPacking; consolidation, reservations |
| `fgd` | as `fair` | allot's profile, GpuPlacement scoring shared GPUs by fragmentation gradient descent; GpuIsolation |

Scenario files may define more (`policies:` in the scenario format): a
base policy with switches changed and scheduler profiles from a
KubeSchedulerConfiguration.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from allot.admission.config import AdmissionConfig
from allot.model.kueue_config import Configuration
from allot.model.loader import Manifests
from allot.scheduling import registry
from allot.scheduling.profile import DEFAULT_SCHEDULER_NAME, Profile, allot_profile
from allot.sim.workload import TRUST_LABEL


@dataclass(frozen=True)
class Policy:
    """One way of running the engine. `fair_sharing` None keeps what the scenario's
    Kueue Configuration says; `profiles` None is kube-scheduler's default profile."""

    name: str
    description: str
    queues: bool = True
    fair_sharing: bool | None = True
    preemption: bool = True
    profiles: Mapping[str, Profile] | None = None
    # Place waiting work by moving running pods (allot.engine.consolidate).
    consolidation: bool = False
    # Hold a node for a large waiting job, backfilling by runtime estimates (allot.engine.reserve).
    reservations: bool = False
    # Keep freed cohort quota for the least-served queue's blocked head (allot.engine.quota_hold).
    quota_holds: bool = False

    def admission_config(self, manifests: Manifests) -> AdmissionConfig:
        configurations = manifests.of_kind(Configuration)
        config = AdmissionConfig.from_configuration(configurations[0] if configurations else None)
        if self.fair_sharing is not None:
            config = dataclasses.replace(config, fair_sharing=self.fair_sharing)
        return config


class PolicyError(ValueError):
    """A policy name that is not known or cannot run in this installation."""


FIFO_PRIORITY = Policy(
    "fifo-priority",
    "kube-scheduler ordering: priority, then arrival; Kueue queues ignored; default preemption",
    queues=False,
    fair_sharing=None,
)
KUEUE = Policy("kueue", "Kueue admission with classic preemption, no fair sharing", fair_sharing=False)
FAIR = Policy(
    "fair",
    "Kueue admission with fair sharing between ClusterQueues; GPU packing, consolidation, reservations, "
    "quota holds",
    fair_sharing=True,
    profiles=MappingProxyType({DEFAULT_SCHEDULER_NAME: allot_profile()}),
    consolidation=True,
    reservations=True,
    quota_holds=True,
)

SHARING_PLUGIN = "GpuPlacement"
ISOLATION_PLUGIN = "GpuIsolation"
DRA_PLUGIN = "DynamicResources"
# GpuPlacement's FGD scores run 0-100; this weight lets them decide among nodes for shared GPUs
# while the other scores (taints, alignment) still separate the rest.
SHARING_WEIGHT = 10


def fgd_policy() -> Policy:
    """`fair` with GpuPlacement (policy FGD) in place of DynamicResources, and GpuIsolation
    keeping shared GPUs to one tenant's trust domain (the pods' trust label)."""
    known = registry.known_plugins()
    if SHARING_PLUGIN not in known:
        raise PolicyError(
            f"policy 'fgd' needs the {SHARING_PLUGIN} scheduler plugin, which is not registered"
        )
    base = allot_profile()
    filters = tuple(SHARING_PLUGIN if f == DRA_PLUGIN else f for f in base.filters)
    weights = {k: v for k, v in base.score_weights.items() if k != DRA_PLUGIN}
    weights[SHARING_PLUGIN] = SHARING_WEIGHT
    # FGD as published: equal scores go to the first node by name (see docs/sharing.md).
    args: dict[str, dict[str, object]] = {SHARING_PLUGIN: {"policy": "FGD", "tieBreak": "name"}}
    if ISOLATION_PLUGIN in known:
        filters = (*filters, ISOLATION_PLUGIN)
        args[ISOLATION_PLUGIN] = {"trustDomain": f"label:{TRUST_LABEL}"}
    profile = dataclasses.replace(base, filters=filters, score_weights=weights, plugin_args=args)
    return dataclasses.replace(
        FAIR,
        name="fgd",
        description="as fair, with shared GPUs placed by fragmentation gradient descent and kept to one trust domain",
        profiles={DEFAULT_SCHEDULER_NAME: profile},
    )


def builtin(name: str) -> Policy:
    """A built-in policy by name; PolicyError if unknown or unavailable."""
    if name == "fgd":
        return fgd_policy()
    found = {p.name: p for p in (FIFO_PRIORITY, KUEUE, FAIR)}.get(name)
    if found is None:
        raise PolicyError(f"unknown policy {name!r}; built in: {', '.join(BUILTIN_NAMES)}")
    return found


BUILTIN_NAMES = ("fifo-priority", "kueue", "fair", "fgd")


def resolve(names: list[str], custom: Mapping[str, Policy]) -> list[Policy]:
    """Policies by name, the scenario's own first; PolicyError naming the first unknown one."""
    policies: list[Policy] = []
    for name in names:
        if name in custom:
            policies.append(custom[name])
        else:
            policies.append(builtin(name))
    return policies
