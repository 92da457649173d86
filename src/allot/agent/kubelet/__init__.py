"""The kubelet DRA plugin of the node agent (`allot agent run --kubelet-plugin`, docs/kubelet-plugin.md).

The kubelet asks the plugin registered under a claim's driver name to prepare the claim before
the pod's containers start and to unprepare it after they stopped. Preparing turns the devices
the scheduler allocated into what the container runtime applies: a CDI spec per claim with the
device nodes, the visible GPUs by UUID and, for fractional GPUs, the MPS limits that make the
allocated share the share the container gets.

Modules, one job each:

* `proto`: the kubelet's two gRPC APIs (DRA v1, plugin registration v1), generated messages;
* `rpc`: service names, method paths, server handlers and client calls over those messages;
* `server`: the unix sockets (one registration socket and one DRA socket per driver);
* `service`: NodePrepareResources / NodeUnprepareResources: idempotent, checkpointed;
* `claims`: reading a claim (and its pods' labels) from the API server;
* `targets`: an allocated device checked against NVML now (UUID, MIG device, memory);
* `cdi`: the CDI spec of a prepared claim, written whole;
* `mps`: the MPS control daemon per fractional GPU, behind a process runner;
* `checkpoint`: the prepared claims on disk, so a restart unprepares exactly what it prepared;
* `files`: durable atomic writes;
* `plugin`: the parts put together for the agent's process.
"""
