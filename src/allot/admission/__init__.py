"""allot.admission: Kueue-compatible quota, fair sharing, admission fair sharing, preemption.

The engine holds one `AdmissionState` (see `allot.admission.state` for the
cycle protocol). Everything here is pure decision logic over that state:
no I/O, no clock (time is a number the caller passes), and every change is
recorded in the `Journal` the engine shares with the cluster state, so an
uncommitted transaction leaves no trace.

Modules, lowest first: `resources` (units), `config` (Kueue Configuration),
`tree` / `quota` (the quota tree), `workload` / `dra_quota` (workloads from
pods), `fair_sharing` (DRS), `flavor_match` / `flavors` (flavor assignment),
`ordering`, `targets` / `classical` / `fair_preemption` / `preemption`,
`afs`, `events`, `errors`, `queues`, `tournament`, `cycle`, `running`, `state`,
`status`, `validate`.
"""

from allot.admission.config import AdmissionConfig, AfsConfig, RequeueConfig, parse_duration
from allot.admission.cycle import Candidate
from allot.admission.errors import AdmissionError
from allot.admission.events import Event, EventKind, ParkKind, ParkReason
from allot.admission.fair_sharing import DRS, compare_drs
from allot.admission.flavors import (
    Assignment,
    FlavorChoice,
    FlavorNodeFilter,
    Mode,
    PodSetAssignment,
    flavor_node_filter,
)
from allot.admission.state import (
    EVICTED_BY_DEACTIVATION,
    EVICTED_BY_PODS_READY_TIMEOUT,
    EVICTED_BY_PREEMPTION,
    AdmissionState,
)
from allot.admission.status import AdmissionStatus, ClusterQueueStatus, CohortStatus, LocalQueueStatus
from allot.admission.targets import (
    IN_CLUSTER_QUEUE,
    IN_COHORT_FAIR_SHARING,
    IN_COHORT_RECLAIM_WHILE_BORROWING,
    IN_COHORT_RECLAMATION,
    Target,
)
from allot.admission.validate import check_quota_tree
from allot.admission.workload import PodSet, Workload, WorkloadBuilder, workload_key_of

__all__ = [
    "DRS",
    "EVICTED_BY_DEACTIVATION",
    "EVICTED_BY_PODS_READY_TIMEOUT",
    "EVICTED_BY_PREEMPTION",
    "IN_CLUSTER_QUEUE",
    "IN_COHORT_FAIR_SHARING",
    "IN_COHORT_RECLAIM_WHILE_BORROWING",
    "IN_COHORT_RECLAMATION",
    "AdmissionConfig",
    "AdmissionError",
    "AdmissionState",
    "AdmissionStatus",
    "AfsConfig",
    "Assignment",
    "Candidate",
    "ClusterQueueStatus",
    "CohortStatus",
    "Event",
    "EventKind",
    "FlavorChoice",
    "FlavorNodeFilter",
    "LocalQueueStatus",
    "Mode",
    "ParkKind",
    "ParkReason",
    "PodSet",
    "PodSetAssignment",
    "RequeueConfig",
    "Target",
    "Workload",
    "WorkloadBuilder",
    "check_quota_tree",
    "compare_drs",
    "flavor_node_filter",
    "parse_duration",
    "workload_key_of",
]
