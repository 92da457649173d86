"""allot: a scheduler for GPUs and other accelerators on Kubernetes.

Layers, lowest first (DESIGN.md; enforced by import-linter): model, cel, dra,
cluster, scheduling, admission, engine, drivers (sim, plan, live, agent), and
faces (report, cli).
"""

__version__ = "0.1.0"
