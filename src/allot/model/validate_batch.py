"""batch/v1 Job validation: what Kueue's Job integration reads of a Job.

The counts follow pkg/apis/batch/validation (non-negative int32); allot also bounds them, since a
queued Job stands as that many placeholder pods. The pod template is checked as a pod, each
problem located under `spec.template`. Nothing here raises.
"""

from __future__ import annotations

from allot.model.batch import Job
from allot.model.core import Pod
from allot.model.errors import Location, ManifestError
from allot.model.validate_common import Problems
from allot.model.validate_core import validate_pod
from allot.model.validate_registry import register

# More pods than this in one Job is refused: its placeholders would be that many pods.
MAX_JOB_PODS = 100_000


@register(Job)
def validate_job(job: Job, where: Location) -> list[ManifestError]:
    problems = Problems(where)
    for field, value in (
        ("spec.parallelism", job.spec.parallelism),
        ("spec.completions", job.spec.completions),
    ):
        if value is not None:
            problems.int_range(field, value, (0, MAX_JOB_PODS))
    template = Pod(metadata=job.spec.template.metadata, spec=job.spec.template.spec)
    return problems.errors + validate_pod(template, where.at("spec.template"))
