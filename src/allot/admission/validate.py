"""Cross-object checks of Kueue objects, each located at the offending field.

`check_quota_tree(manifests)` returns every problem Kueue's webhooks or
cache would report for the quota tree, as `ManifestError`s:

* a cycle of Cohort `spec.parentName` links (the cycle is named);
* a ClusterQueue (or Cohort) flavor naming a ResourceFlavor that does not
  exist (Kueue marks the queue inactive, FlavorNotFound);
* a LocalQueue naming a ClusterQueue that does not exist;
* a resource or a flavor in two resource groups of one queue;
* a flavor whose resources are not the group's coveredResources, in order;
* borrowingLimit / lendingLimit without a cohort (or, for a Cohort, without
  a parent), lendingLimit above nominalQuota, a negative quantity;
* borrowWithinCohort without reclaimWithinCohort, or with fair sharing on;
  flavorFungibility.preference without both policies TryNextFlavor;
* a negative fair-sharing weight;
* a Configuration with preemption strategies in an order Kueue rejects, or
  durations that are not Go durations.

A Cohort's `parentName` (or a ClusterQueue's `cohortName`) naming a cohort
that has no Cohort object is not an error: Kueue creates the cohort
implicitly, with no quota of its own.
"""

from __future__ import annotations

from collections.abc import Iterable

from allot.admission.config import ALLOWED_STRATEGY_ORDERS, parse_duration
from allot.admission.quota import NEVER, TRY_NEXT_FLAVOR, cohort_cycles
from allot.model.base import Object
from allot.model.errors import Location, ManifestError
from allot.model.kueue import ClusterQueue, Cohort, LocalQueue, ResourceFlavor, ResourceGroup
from allot.model.kueue_config import Configuration
from allot.model.loader import Manifests


def _where(manifests: Manifests, obj: Object, field: str) -> Location:
    base = manifests.location_of(obj) or Location(kind=obj.KIND, namespace=obj.namespace, name=obj.name)
    return base.at(field)


def _check_groups(
    manifests: Manifests,
    obj: ClusterQueue | Cohort,
    groups: Iterable[ResourceGroup],
    *,
    flavors: set[str],
    may_limit: bool,
    limit_message: str,
) -> list[ManifestError]:
    errors: list[ManifestError] = []
    covered_at: dict[str, int] = {}
    flavor_at: dict[str, int] = {}
    for g, group in enumerate(groups):
        base = f"spec.resourceGroups[{g}]"
        for r, resource in enumerate(group.covered_resources):
            if resource in covered_at:
                errors.append(
                    ManifestError(
                        _where(manifests, obj, f"{base}.coveredResources[{r}]"),
                        f"resource {resource} is already covered by spec.resourceGroups[{covered_at[resource]}]; "
                        "each resource may be in only one resource group",
                    )
                )
            else:
                covered_at[resource] = g
        for f, flavor in enumerate(group.flavors):
            where = f"{base}.flavors[{f}]"
            if flavor.name in flavor_at:
                errors.append(
                    ManifestError(
                        _where(manifests, obj, f"{where}.name"),
                        f"flavor {flavor.name} is already in spec.resourceGroups[{flavor_at[flavor.name]}]; "
                        "each flavor may be in only one resource group",
                    )
                )
            else:
                flavor_at[flavor.name] = g
            if flavor.name not in flavors:
                errors.append(
                    ManifestError(
                        _where(manifests, obj, f"{where}.name"),
                        f"ResourceFlavor {flavor.name!r} does not exist",
                    )
                )
            names = tuple(q.name for q in flavor.resources)
            if names != tuple(group.covered_resources):
                errors.append(
                    ManifestError(
                        _where(manifests, obj, f"{where}.resources"),
                        f"expected the covered resources in order ({', '.join(group.covered_resources)}), "
                        f"got ({', '.join(names)})",
                    )
                )
            for q, quota in enumerate(flavor.resources):
                at = f"{where}.resources[{q}]"
                for name, value in (
                    ("nominalQuota", quota.nominal_quota),
                    ("borrowingLimit", quota.borrowing_limit),
                    ("lendingLimit", quota.lending_limit),
                ):
                    if value is not None and value.sign() < 0:
                        errors.append(
                            ManifestError(_where(manifests, obj, f"{at}.{name}"), "must be non-negative")
                        )
                if not may_limit:
                    if quota.borrowing_limit is not None:
                        errors.append(
                            ManifestError(_where(manifests, obj, f"{at}.borrowingLimit"), limit_message)
                        )
                    if quota.lending_limit is not None:
                        errors.append(
                            ManifestError(_where(manifests, obj, f"{at}.lendingLimit"), limit_message)
                        )
                nominal = quota.nominal_quota
                if quota.lending_limit is not None and nominal is not None and quota.lending_limit > nominal:
                    errors.append(
                        ManifestError(
                            _where(manifests, obj, f"{at}.lendingLimit"),
                            f"must be less than or equal to nominalQuota ({nominal})",
                        )
                    )
    return errors


def _weight_errors(manifests: Manifests, obj: ClusterQueue | Cohort | LocalQueue) -> list[ManifestError]:
    fair = obj.spec.fair_sharing
    if fair is not None and fair.weight is not None and fair.weight.sign() < 0:
        return [ManifestError(_where(manifests, obj, "spec.fairSharing.weight"), "must be 0 or positive")]
    return []


def _check_configuration(manifests: Manifests, config: Configuration) -> list[ManifestError]:
    errors: list[ManifestError] = []
    if config.fair_sharing is not None and config.fair_sharing.preemption_strategies:
        given = tuple(config.fair_sharing.preemption_strategies)
        if given not in ALLOWED_STRATEGY_ORDERS:
            allowed = "; ".join("[" + ", ".join(o) + "]" for o in ALLOWED_STRATEGY_ORDERS)
            errors.append(
                ManifestError(
                    _where(manifests, config, "fairSharing.preemptionStrategies"),
                    f"unsupported order [{', '.join(given)}]; expected one of {allowed}",
                )
            )
    afs = config.admission_fair_sharing
    if afs is not None:
        for name, value in (
            ("usageHalfLifeTime", afs.usage_half_life_time),
            ("usageSamplingInterval", afs.usage_sampling_interval),
        ):
            if value:
                try:
                    parse_duration(value)
                except ValueError as err:
                    errors.append(
                        ManifestError(_where(manifests, config, f"admissionFairSharing.{name}"), str(err))
                    )
    return errors


def check_quota_tree(manifests: Manifests) -> list[ManifestError]:
    """Every problem of the Kueue objects in `manifests`; empty when Kueue would accept them."""
    errors: list[ManifestError] = []
    flavors = {f.name for f in manifests.of_kind(ResourceFlavor)}
    cohorts = manifests.of_kind(Cohort)
    queues = manifests.of_kind(ClusterQueue)
    configs = manifests.of_kind(Configuration)
    fair_sharing = bool(configs) and configs[0].fair_sharing_enabled
    parent_of = {c.name: c.parent_ref for c in cohorts if c.parent_ref}
    reported: set[tuple[str, ...]] = set()
    by_name = {c.name: c for c in cohorts}
    for name, cycle in sorted(cohort_cycles(parent_of).items()):
        if name not in cycle or tuple(cycle) in reported:
            continue
        reported.add(tuple(cycle))
        first = by_name[cycle[0]]
        field = "spec.parentName" if first.spec.parent_name else "spec.parent"
        errors.append(
            ManifestError(
                _where(manifests, first, field),
                f"cohort cycle: {' -> '.join([*cycle, cycle[0]])}; Kueue stops admitting in every "
                "ClusterQueue of the tree until the cycle is removed",
            )
        )
    for cohort in cohorts:
        errors += _check_groups(
            manifests,
            cohort,
            cohort.spec.resource_groups,
            flavors=flavors,
            may_limit=bool(cohort.parent_ref),
            limit_message="must be unset when the Cohort has no parentName",
        )
        errors += _weight_errors(manifests, cohort)
    cq_names = {q.name for q in queues}
    for cq in queues:
        errors += _check_groups(
            manifests,
            cq,
            cq.spec.resource_groups,
            flavors=flavors,
            may_limit=bool(cq.cohort_ref),
            limit_message="must be unset when the ClusterQueue has no cohort",
        )
        errors += _weight_errors(manifests, cq)
        preemption = cq.spec.preemption
        if preemption is not None and preemption.borrow_within_cohort is not None:
            policy = preemption.borrow_within_cohort.policy or NEVER
            if policy != NEVER and (preemption.reclaim_within_cohort or NEVER) == NEVER:
                errors.append(
                    ManifestError(
                        _where(manifests, cq, "spec.preemption.borrowWithinCohort.policy"),
                        "reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never",
                    )
                )
            if policy != NEVER and fair_sharing:
                errors.append(
                    ManifestError(
                        _where(manifests, cq, "spec.preemption.borrowWithinCohort.policy"),
                        "borrowWithinCohort may only be used with classical preemption, not with fair sharing",
                    )
                )
        fungibility = cq.spec.flavor_fungibility
        both_try_next = fungibility is not None and (
            fungibility.when_can_borrow == fungibility.when_can_preempt == TRY_NEXT_FLAVOR
        )
        if fungibility is not None and fungibility.preference is not None and not both_try_next:
            errors.append(
                ManifestError(
                    _where(manifests, cq, "spec.flavorFungibility.preference"),
                    f"preference {fungibility.preference!r} requires both whenCanBorrow and "
                    "whenCanPreempt to be TryNextFlavor",
                )
            )
    for lq in manifests.of_kind(LocalQueue):
        if lq.spec.cluster_queue not in cq_names:
            errors.append(
                ManifestError(
                    _where(manifests, lq, "spec.clusterQueue"),
                    f"ClusterQueue {lq.spec.cluster_queue!r} does not exist",
                )
            )
        errors += _weight_errors(manifests, lq)
    for config in configs:
        errors += _check_configuration(manifests, config)
    return errors
