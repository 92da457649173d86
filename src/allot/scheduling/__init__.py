"""Placement: the per-pod and per-gang cycle as named extension points, one module per plugin.

`scheduler.Scheduler` runs a cycle (pre-filter, mask filters over all nodes,
node filters, scores, reserve) with the plugins a `profile.Profile` names
(`registry` maps names to factories, `plugins/` holds one module each);
`gang` places groups all-or-nothing; `preemption` finds victims. It reads a
`ClusterState` and changes it only by binding.
"""
