"""allot.dashboard: the monitoring view of a live cluster or a simulation, served by allot itself.

Three views, linked to each other: the cluster (GPUs ready, allocated and in use by model and
node pool, fragmentation, pending work, allocation over time), each node (its devices as a map
by NUMA node and PCIe root, MIG slices, shared GPUs and who holds them, device health) and each
application (namespace, LocalQueue, ClusterQueue, pod group: quota, usage, borrowing, fair
share, waits, preemptions, every pending pod with its reason).

The layers inside, lowest first:

* `model`: the `Snapshot`, plain records of one instant (what the views read, what a recorded
  simulation stores);
* `snapshot`: `Snapshotter.take(...)`, a pure function of the engine's state (ClusterState,
  AdmissionState, the scheduler's profiles) and the decisions seen so far (`decisions`), with
  `devices` (each node's devices and who holds them), `demand` (what pending pods ask for);
* `measures`, `history`, `fairness`: GPUs by state, pool and model; totals over time; fair shares;
* `cluster_view`, `node_view`, `app_view`: pure functions of a snapshot and a validated query
  (`query`) to bounded JSON documents, aggregated server-side (applications: `apps`);
* `server`: the aiohttp routes (JSON, server-sent events, the page and its assets in `static/`,
  nothing from a CDN) over a `Source`: `live_source` (the live scheduler's mirror, `allot run`
  and `allot dashboard`) or `frames` (a simulation's frames over simulated time).

The live driver and the simulator know nothing of this package: the CLI composes them.
"""
