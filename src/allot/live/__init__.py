"""The live scheduler behind `allot run` (docs/live.md): the same engine as the simulator, driven by a
real API server.

Reflectors (`reflector`) list and watch each kind into `cache.LiveCache`, which keeps the engine's
ClusterState current, with assumed decisions on top; `scheduler` runs engine cycles over the pending
pods of allot's profiles; `binder` writes claims and Bindings as kube-scheduler does, in turns;
`status` and `queue_status` write what users see; `leader` holds the Lease; `app` ties them to the
HTTP endpoints (`http`, `metrics`, the dashboard) and to the process's lifetime.
"""
