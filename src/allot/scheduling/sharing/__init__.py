"""GPU sharing in placement: the shared-GPU table, trust domains, fragmentation and placement policies.

Layering: part of `allot.scheduling`; the plugins `GpuPlacement` and
`GpuIsolation` (in `allot.scheduling.plugins`) are the only users. See
docs/sharing.md for the device models, policies and the experiment.
"""
