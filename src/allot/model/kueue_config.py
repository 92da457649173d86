"""config.kueue.x-k8s.io Configuration: the parts of Kueue's controller
configuration that change admission decisions.

Kueue reads this object from a file (its ConfigMap), not from the API server,
but it has apiVersion and kind like any object, so allot loads it with the
other manifests. Only the fields admission uses are modelled; the rest of a
real configuration (webhook, metrics, integrations ...) is dropped as unknown.
Durations stay strings (`5m`, `1h30m`, as Go's metav1.Duration prints them);
`allot.admission.config` parses them.
"""

from __future__ import annotations

from typing import ClassVar

import msgspec

from allot.model.base import Object, Record

CONFIG_GROUP = "config.kueue.x-k8s.io"

LESS_THAN_OR_EQUAL_TO_FINAL_SHARE = "LessThanOrEqualToFinalShare"
LESS_THAN_INITIAL_SHARE = "LessThanInitialShare"


class FairSharingConfig(Record, frozen=True):
    """`fairSharing`. v1beta1 switches it on with `enable: true`; v1beta2 dropped
    `enable` and turns fair sharing on whenever the block is present."""

    enable: bool | None = None
    preemption_strategies: tuple[str, ...] = ()


class AdmissionFairSharingConfig(Record, frozen=True):
    usage_half_life_time: str = ""
    usage_sampling_interval: str = ""
    resource_weights: dict[str, float] = msgspec.field(default_factory=dict)


class DeviceClassMapping(Record, frozen=True):
    """A quota resource name and the DeviceClasses whose devices it counts."""

    name: str = ""
    device_class_names: tuple[str, ...] = ()


class ResourcesConfig(Record, frozen=True):
    exclude_resource_prefixes: tuple[str, ...] = ()
    device_class_mappings: tuple[DeviceClassMapping, ...] = ()


class RequeuingStrategy(Record, frozen=True):
    timestamp: str | None = None
    backoff_limit_count: int | None = None
    backoff_base_seconds: int | None = None
    backoff_max_seconds: int | None = None


class WaitForPodsReady(Record, frozen=True):
    enable: bool | None = None  # v1beta1 only
    timeout: str | None = None
    block_admission: bool | None = None
    requeuing_strategy: RequeuingStrategy | None = None
    recovery_timeout: str | None = None


class Configuration(Object, frozen=True):
    API_GROUP: ClassVar[str] = CONFIG_GROUP
    KIND: ClassVar[str] = "Configuration"
    API_VERSIONS: ClassVar[tuple[str, ...]] = ("v1beta2", "v1beta1")
    # Kueue reads this from a config file, which has no metadata.
    NAME_REQUIRED: ClassVar[bool] = False

    fair_sharing: FairSharingConfig | None = None
    admission_fair_sharing: AdmissionFairSharingConfig | None = None
    resources: ResourcesConfig | None = None
    wait_for_pods_ready: WaitForPodsReady | None = None
    manage_jobs_without_queue_name: bool = False

    @property
    def fair_sharing_enabled(self) -> bool:
        block = self.fair_sharing
        if block is None:
            return False
        if block.enable is not None:
            return block.enable
        # v1beta2 has no `enable`: the block's presence is the switch.
        return not self.api_version.endswith("/v1beta1")
