"""batch/v1 Jobs, as far as Kueue's Job integration reads them.

A Job sent to a Kueue queue is one workload: its pod template, `parallelism` times (at most
`completions`). Only what admitting it and following it to its end needs is modelled: the
template, the counts, `suspend`, and the conditions that say it finished.
"""

from __future__ import annotations

from typing import ClassVar

import msgspec

from allot.model.base import Condition, Object, ObjectMeta, Record
from allot.model.core import PodSpec


class PodTemplateSpec(Record, frozen=True):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PodSpec = msgspec.field(default_factory=PodSpec)


class JobSpec(Record, frozen=True):
    parallelism: int | None = None
    completions: int | None = None
    suspend: bool | None = None
    template: PodTemplateSpec = msgspec.field(default_factory=PodTemplateSpec)


class JobStatus(Record, frozen=True):
    conditions: tuple[Condition, ...] = ()
    active: int = 0
    succeeded: int = 0
    failed: int = 0


class Job(Object, frozen=True):
    API_GROUP: ClassVar[str] = "batch"
    KIND: ClassVar[str] = "Job"
    NAMESPACED: ClassVar[bool] = True

    spec: JobSpec = msgspec.field(default_factory=JobSpec)
    status: JobStatus = msgspec.field(default_factory=JobStatus)

    @property
    def suspended(self) -> bool:
        return self.spec.suspend is True

    @property
    def finished(self) -> bool:
        """Complete or Failed: the Job controller will make no more pods."""
        return any(c.type in ("Complete", "Failed") and c.status == "True" for c in self.status.conditions)

    @property
    def pod_count(self) -> int:
        """How many pods run at once: `parallelism` (default 1), at most `completions`."""
        count = self.spec.parallelism if self.spec.parallelism is not None else 1
        if self.spec.completions is not None:
            count = min(count, self.spec.completions)
        return max(count, 0)
