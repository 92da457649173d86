"""Differential testing against the real kube-scheduler (docs/differential.md).

`generate` makes random clusters and workloads from a seed, `runner` plays one on a real control
plane with kube-scheduler and records a `case` (the objects as the API held them before
scheduling, and kube-scheduler's decision for every pod in creation order), `compare` runs
allot's planner on the same objects and compares, `validity` checks any placement on its own,
`features` tags a case with what it uses and lists the features allot does not handle yet.
"""
