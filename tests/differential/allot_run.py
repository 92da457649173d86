"""Play a differential case with `allot run` in kube-scheduler's place, and hold it to `allot place`.

`AllotRun` is a `runner.Scheduler`: for each case it starts `allot run --scheduler-name
default-scheduler` (the generated pods name no scheduler) on the case's cluster and waits until
it answers /readyz (every watched kind listed). The recorder then plays the case exactly as it
plays it with kube-scheduler: pods released one at a time, victims deleted as their kubelet
would.

`compare_live(case)` holds such a recording to the planner: one engine, so for every step,
planned from the state `allot run` had when it took the pod, `allot place` must bind the pod to
the same node, allocate its claims the same devices, evict the same victims, or leave it pending
with the same message. Nothing is excused as a tie: both break ties by the same keys.
"""

from __future__ import annotations

import json
import time
import urllib.request
from dataclasses import dataclass, field
from typing import Any

from allot.model.codec import object_to_data
from controlplane import ControlPlane
from differential.case import Case, key_of, state_before
from differential.compare import run_allot
from live.cluster import AllotProcess

ALLOT_RUN = "allot run"
READY_TIMEOUT = 60.0


class AllotRun:
    """`allot run` as the scheduler of a differential case (see the module docstring)."""

    version = ALLOT_RUN

    def __init__(self, plane: ControlPlane) -> None:
        self.plane = plane
        self.process: AllotProcess | None = None
        self.last_log = ""  # the log of the process stopped last

    def restart(self) -> None:
        self.stop()
        # The default client rate would make each step wait on allot's own writes.
        process = AllotProcess(
            self.plane, "--scheduler-name=default-scheduler", "--kube-api-qps=500", "--kube-api-burst=1000"
        )
        self.process = process
        port = process.http_port(timeout=READY_TIMEOUT)
        deadline = time.monotonic() + READY_TIMEOUT
        while not _ready(port):
            if not process.alive() or time.monotonic() > deadline:
                raise RuntimeError("allot run did not become ready:\n" + process.output()[-3000:])
            time.sleep(0.05)

    def stop(self) -> None:
        if self.process is not None:
            code = self.process.stop()
            self.last_log = self.process.output()
            self.process = None
            # SIGTERM is a graceful stop: anything else is a failure of the case.
            if code != 0:
                raise RuntimeError(f"allot run exited with {code}:\n" + self.last_log[-3000:])


def _ready(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as answer:
            return bool(answer.status == 200)
    except OSError:
        return False


@dataclass
class LiveStep:
    """One pod: what `allot run` did and what `allot place` plans from the same state."""

    pod: str
    run_node: str | None
    place_node: str | None
    run_message: str = ""
    place_message: str = ""
    run_victims: list[str] = field(default_factory=list)
    place_victims: list[str] = field(default_factory=list)
    run_devices: dict[str, Any] = field(default_factory=dict)
    place_devices: dict[str, Any] = field(default_factory=dict)

    def differences(self) -> list[str]:
        out = []
        if self.run_node != self.place_node:
            out.append(f"node: allot run {self.run_node}, allot place {self.place_node}")
        if self.run_node is None and self.place_node is None and self.run_message != self.place_message:
            out.append(f"message: allot run {self.run_message!r}, allot place {self.place_message!r}")
        if self.run_victims != self.place_victims:
            out.append(f"victims: allot run {self.run_victims}, allot place {self.place_victims}")
        if (
            self.run_node is not None
            and self.run_node == self.place_node
            and self.run_devices != self.place_devices
        ):
            out.append(f"devices: allot run {self.run_devices}, allot place {self.place_devices}")
        return out


def _devices(claim: dict[str, Any] | None) -> Any:
    """A claim's allocated devices as (request, driver, pool, device, shares), order kept."""
    allocation = ((claim or {}).get("status") or {}).get("allocation")
    if not allocation:
        return None
    results = (allocation.get("devices") or {}).get("results") or []
    return [
        (
            r.get("request"),
            r.get("driver"),
            r.get("pool"),
            r.get("device"),
            json.dumps(r.get("consumedCapacity"), sort_keys=True),
        )
        for r in results
    ]


def _pod_claims(pod: dict[str, Any]) -> list[str]:
    namespace = pod["metadata"]["namespace"]
    names = [s.get("resourceClaimName") for s in (pod.get("status") or {}).get("resourceClaimStatuses") or []]
    names += [c.get("resourceClaimName") for c in pod["spec"].get("resourceClaims") or []]
    return sorted({f"{namespace}/{n}" for n in names if n})


def compare_live(case: Case) -> list[LiveStep]:
    """Every step of a case `allot run` recorded, against `allot place` from the same state."""
    steps = []
    pods = {key_of(p): p for p in case.pods()}
    for index, step in enumerate(case.steps):
        objects = state_before(case, index)
        result = run_allot(objects)
        bound = {b.pod: b.node for b in result.bound}
        # The claims this step allocated: the pod's own that were not allocated before it.
        before = {key_of(o) for o in objects if o["kind"] == "ResourceClaim" and _devices(o) is not None}
        mine = [name for name in _pod_claims(pods[step.pod]) if name not in before]
        claims = {c.key: c for c in result.state.claims.values()}
        planned = {name: _devices(object_to_data(claims[name])) for name in mine if name in claims}
        recorded = {name: _devices(step.changes.claims.get(name)) for name in mine}
        steps.append(
            LiveStep(
                pod=step.pod,
                run_node=step.node,
                place_node=bound.get(step.pod),
                run_message=step.message,
                place_message=result.waiting.get(step.pod, ""),
                run_victims=sorted(step.changes.deleted),
                place_victims=sorted(e.pod for e in result.evicted),
                run_devices={k: v for k, v in recorded.items() if v is not None},
                place_devices={k: v for k, v in planned.items() if v is not None},
            )
        )
    return steps
