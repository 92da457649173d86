"""A Job's counts and pod template are checked where they are, with the field named."""

from __future__ import annotations

import pytest

from allot.model.errors import ManifestErrors
from allot.model.loader import load_text

JOB = """
apiVersion: batch/v1
kind: Job
metadata: {name: j, namespace: ml, labels: {kueue.x-k8s.io/queue-name: main}}
spec:
  parallelism: PARALLELISM
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, image: busybox, resources: {requests: {cpu: CPU}}}]
"""


def _load(parallelism: str, cpu: str = '"1"') -> list[str]:
    try:
        load_text(JOB.replace("PARALLELISM", parallelism).replace("CPU", cpu), "job.yaml")
    except ManifestErrors as failure:
        return [str(e) for e in failure.errors]
    return []


def test_a_valid_job_loads() -> None:
    assert _load("4") == []


@pytest.mark.parametrize("parallelism", ["-1", "100001", "100000000000"])
def test_absurd_parallelism_is_refused_at_its_field(parallelism: str) -> None:
    (error,) = _load(parallelism)
    assert "job.yaml" in error and "Job ml/j" in error and "spec.parallelism" in error


def test_a_bad_template_is_located_under_spec_template() -> None:
    (error,) = _load("2", '"-1"')
    assert "Job ml/j" in error and "spec.template.spec.containers[0].resources.requests" in error
