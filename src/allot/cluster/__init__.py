"""The cluster's state: nodes, pods, claims and device use, changed only through journaled methods.

`state.ClusterState` is what placement and admission read; `journal` makes
every change undoable (transactions for what-ifs); `claims` creates claims
from templates as the resourceclaim controller does; `invariants` audits a
state from scratch. Imports only the model and the DRA allocator's state.
"""
