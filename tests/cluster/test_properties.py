"""Random clusters and pod streams never break the invariants (DESIGN.md, Reliability)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from allot.cluster.invariants import check
from allot.cluster.state import ClusterState
from allot.scheduling.gang import gangs, place_gang
from allot.scheduling.preemption import Preemptor
from allot.scheduling.scheduler import Placement, Scheduler, Unschedulable
from builders import claim_spec, claim_template, device_class, gpu_slice, node, pod
from fuzzing import examples

pod_shapes = st.tuples(
    st.sampled_from(["100m", "500m", "1", "2", "3"]),  # cpu
    st.integers(min_value=0, max_value=3),  # gpus (via one template per count)
    st.integers(min_value=0, max_value=3),  # priority
    st.sampled_from([None, "g1", "g2"]),  # gang
)
actions = st.lists(
    st.tuples(st.sampled_from(["submit", "remove", "preempt"]), pod_shapes), min_size=1, max_size=25
)


@settings(max_examples=examples(60), deadline=None)
@given(
    node_gpus=st.lists(st.integers(min_value=0, max_value=4), min_size=1, max_size=4),
    steps=actions,
)
def test_random_streams_keep_invariants(
    node_gpus: list[int], steps: list[tuple[str, tuple[str, int, int, str | None]]]
) -> None:
    nodes = [node(f"n{i}", cpu="4") for i in range(len(node_gpus))]
    slices = [gpu_slice(f"n{i}", g) for i, g in enumerate(node_gpus) if g]
    templates = [claim_template(f"gpus-{k}", claim_spec(("gpu", "gpu.example.com", k))) for k in (1, 2, 3)]
    state = ClusterState(nodes=nodes, slices=slices, classes=[device_class()], templates=templates)
    scheduler = Scheduler(state)
    preemptor = Preemptor(scheduler)
    for step, (action, (cpu, gpus, priority, group)) in enumerate(steps):
        name = f"p{step}"
        solo = sorted(
            k for k, i in state.pods.items() if "kueue.x-k8s.io/pod-group-name" not in i.pod.metadata.labels
        )
        if action == "remove" and solo:
            # Gang members are not removed one by one: that would legitimately leave a partial gang.
            state.remove_pod(solo[step % len(solo)])
        else:
            labels = {"kueue.x-k8s.io/pod-group-name": group} if group else {}
            annotations = {"kueue.x-k8s.io/pod-group-total-count": "2"} if group else {}
            claims = {"gpu": f"gpus-{gpus}"} if gpus else {}
            state.add_pod(
                pod(name, cpu=cpu, claims=claims, priority=priority, labels=labels, annotations=annotations)
            )
            if group:
                gang = gangs(state.pods.values())[f"default/{group}"]
                if gang.complete:
                    place_gang(state, gang, scheduler.schedule)
            else:
                outcome = scheduler.schedule(f"default/{name}")
                if isinstance(outcome, Unschedulable) and action == "preempt":
                    choice = preemptor.preempt(f"default/{name}", outcome)
                    if choice is not None:
                        for victim in choice.victims:
                            state.unbind(victim)
                        assert isinstance(scheduler.schedule(f"default/{name}"), Placement)
        assert check(state) == []
        for gang in gangs(state.pods.values()).values():
            bound = sum(1 for k in gang.members if state.pods[k].bound)
            assert bound in (0, len(gang.members)) or bound >= gang.required
