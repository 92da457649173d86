"""deploy/agent/ against a real API server with RBAC on: the manifests are valid, the agent's
ServiceAccount can do all the agent does and nothing it does not need, and the admission policy
keeps each agent to its own node's slices."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
import yaml
from lightkube.core.exceptions import ApiError

from agent.live import agent, machine, ready_node, slices
from allot.agent.client import make_client
from allot.agent.kubelet.claims import ApiClaimReader
from allot.agent.kubelet.targets import PrepareError
from allot.model.resource import ResourceClaim
from controlplane import ControlPlane, ControlPlaneError

DEPLOY = Path(__file__).parents[2] / "deploy" / "agent"
AGENT_USER = "system:serviceaccount:allot-system:allot-agent"


def documents(name: str) -> list[dict[str, object]]:
    return [d for d in yaml.safe_load_all((DEPLOY / name).read_text()) if d]


def can_i(plane: ControlPlane, verb: str, resource: str) -> bool:
    return plane.kubectl("auth", "can-i", verb, resource, f"--as={AGENT_USER}", check=False).strip() == "yes"


def install(plane: ControlPlane, *, rules: list[dict[str, object]] | None = None) -> None:
    plane.apply((DEPLOY / "namespace.yaml").read_text())
    docs = documents("rbac.yaml")
    if rules is not None:
        role = next(d for d in docs if d["kind"] == "ClusterRole")
        role["rules"] = rules
    plane.apply(yaml.safe_dump_all(docs))
    plane.apply((DEPLOY / "admission-policy.yaml").read_text())


def agent_kubeconfig(plane: ControlPlane, node: str) -> Path:
    """The token a pod of the DaemonSet on `node` would get (bound to the pod, naming the node)."""
    ready_node(plane, node)
    plane.apply(
        f"apiVersion: v1\nkind: Pod\nmetadata: {{name: agent-{node}, namespace: allot-system}}\n"
        f"spec: {{nodeName: {node}, serviceAccountName: allot-agent, containers: [{{name: a, image: allot:0.1.0}}]}}\n"
    )
    return plane.service_account_kubeconfig("allot-system", "allot-agent", bound_pod=f"agent-{node}")


async def publish_and_shrink(plane: ControlPlane, tmp: Path, node: str, kubeconfig: Path) -> None:
    """Everything the agent does to the API: read the Node, list, create, update and delete slices."""
    root, mig = machine(tmp, "dgx-h100", node, "dgx-h100-mig.yaml")
    a = agent(plane, root, mig, node, kubeconfig=kubeconfig)
    try:
        await a.start()
        a.sources.gpu = machine(tmp / "whole", "dgx-h100", node, "dgx-h100.yaml")[1]
        a.refresh(inventory=True)
        await a.publish()
    finally:
        await a.close()


def test_the_manifests_pass_the_api_servers_validation(control_plane: ControlPlane) -> None:
    control_plane.apply((DEPLOY / "namespace.yaml").read_text())
    out = control_plane.kubectl("apply", "--dry-run=server", "-f", str(DEPLOY))
    assert "daemonset.apps/allot-agent" in out and "validatingadmissionpolicy" in out
    (daemonset,) = documents("daemonset.yaml")
    container = daemonset["spec"]["template"]["spec"]["containers"][0]  # type: ignore[index]
    env = {e["name"]: e for e in container["env"]}
    assert env["NODE_NAME"]["valueFrom"] == {"fieldRef": {"fieldPath": "spec.nodeName"}}
    assert {"name": "sys", "mountPath": "/host/sys", "readOnly": True} in container["volumeMounts"]
    assert "--sysfs-root=/host/sys" in container["args"]


def test_the_agents_account_can_do_what_the_agent_does(control_plane: ControlPlane, tmp_path: Path) -> None:
    install(control_plane)
    kubeconfig = agent_kubeconfig(control_plane, "rbac-00")
    asyncio.run(publish_and_shrink(control_plane, tmp_path, "rbac-00", kubeconfig))
    published = slices(control_plane, "rbac-00")
    assert sorted(s["spec"]["driver"] for s in published) == ["dra.cpu", "dra.net", "gpu.nvidia.com"]
    assert all(s["metadata"]["ownerReferences"][0]["name"] == "rbac-00" for s in published)
    assert {
        s["spec"]["pool"]["generation"] for s in published if s["spec"]["driver"] == "gpu.nvidia.com"
    } == {2}
    for verb, resource in (
        ("list", "pods"),
        ("get", "secrets"),
        ("update", "nodes"),
        ("watch", "resourceslices"),
    ):
        assert not can_i(control_plane, verb, resource)


def test_each_granted_verb_is_needed(control_plane: ControlPlane, tmp_path: Path) -> None:
    (role,) = [d for d in documents("rbac.yaml") if d["kind"] == "ClusterRole"]
    granted = [(rule, verb) for rule in role["rules"] for verb in rule["verbs"]]  # type: ignore[union-attr]
    assert len(granted) == 5
    for index, (dropped_rule, dropped_verb) in enumerate(granted):
        rules = []
        for rule in role["rules"]:  # type: ignore[union-attr]
            verbs = [v for v in rule["verbs"] if (rule, v) != (dropped_rule, dropped_verb)]
            if verbs:
                rules.append({**rule, "verbs": verbs})
        install(control_plane, rules=rules)
        resource = dropped_rule["resources"][0]
        deadline = time.monotonic() + 30  # the authorizer's cache catches up within a moment
        while can_i(control_plane, dropped_verb, resource) and time.monotonic() < deadline:
            time.sleep(0.1)
        node = f"rbac-{index + 10}"
        kubeconfig = agent_kubeconfig(control_plane, node)
        if resource == "nodes":
            # Without the Node the slices lose their owner: nothing removes them with the node.
            asyncio.run(publish_and_shrink(control_plane, tmp_path / node, node, kubeconfig))
            assert all("ownerReferences" not in s["metadata"] for s in slices(control_plane, node))
            continue
        with pytest.raises(ApiError) as failure:
            asyncio.run(publish_and_shrink(control_plane, tmp_path / node, node, kubeconfig))
        assert failure.value.status.code == 403, (dropped_verb, failure.value.status.message)
    install(control_plane)


def test_an_agent_may_write_only_its_own_nodes_slices(control_plane: ControlPlane, tmp_path: Path) -> None:
    install(control_plane)
    mine = agent_kubeconfig(control_plane, "vap-00")
    asyncio.run(publish_and_shrink(control_plane, tmp_path / "own", "vap-00", mine))
    ready_node(control_plane, "vap-01")
    other = "apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {name: vap-01-forged}\n"
    other += "spec: {driver: gpu.nvidia.com, nodeName: vap-01, pool: {name: vap-01, generation: 1, resourceSliceCount: 1}}\n"
    with pytest.raises(ControlPlaneError, match="on node vap-00 may not write ResourceSlices of node vap-01"):
        control_plane.kubectl("apply", "--server-side", "-f", "-", input=other, kubeconfig=mine)
    # Another node's slice (made by the admin) cannot be deleted either.
    control_plane.apply(other)
    with pytest.raises(ControlPlaneError, match="may not write ResourceSlices of node vap-01"):
        control_plane.kubectl("delete", "resourceslice", "vap-01-forged", kubeconfig=mine)
    # A token that is not bound to a pod names no node: no writes at all.
    unbound = control_plane.service_account_kubeconfig("allot-system", "allot-agent")
    with pytest.raises(ControlPlaneError, match="names no node"):
        control_plane.kubectl(
            "delete",
            "resourceslice",
            slices(control_plane, "vap-00")[0]["metadata"]["name"],
            kubeconfig=unbound,
        )


async def read_claim(kubeconfig: Path, namespace: str, name: str) -> ResourceClaim | None:
    """What the kubelet plugin reads when the kubelet hands it a claim."""
    api = make_client(kubeconfig)
    try:
        return await ApiClaimReader(api).claim(namespace, name)
    finally:
        await api.client.close()


def test_the_kubelet_plugin_reads_claims_with_its_own_role(control_plane: ControlPlane) -> None:
    install(control_plane)
    control_plane.apply((DEPLOY / "rbac-kubelet-plugin.yaml").read_text())
    kubeconfig = agent_kubeconfig(control_plane, "plug-00")
    control_plane.apply(
        "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: plugin-read, namespace: default}\n"
        "spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: gpu.nvidia.com}}]}}\n"
    )
    deadline = time.monotonic() + 30
    while not can_i(control_plane, "get", "resourceclaims") and time.monotonic() < deadline:
        time.sleep(0.1)
    claim = asyncio.run(read_claim(kubeconfig, "default", "plugin-read"))
    assert claim is not None and claim.name == "plugin-read"
    for verb in ("list", "update", "delete"):
        assert not can_i(control_plane, verb, "resourceclaims")
    # Without the role the plugin cannot read claims: each prepare fails, saying so.
    control_plane.kubectl("delete", "clusterrolebinding", "allot-agent-kubelet-plugin")
    deadline = time.monotonic() + 30
    while can_i(control_plane, "get", "resourceclaims") and time.monotonic() < deadline:
        time.sleep(0.1)
    with pytest.raises(PrepareError, match=r"claim default/plugin-read: cannot read it: .*forbidden"):
        asyncio.run(read_claim(kubeconfig, "default", "plugin-read"))
