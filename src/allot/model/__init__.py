"""Kubernetes objects as typed, immutable records, and loading them from manifests.

The lowest layer of allot: it imports nothing else from the package. Records
live in one module per API group (`core`, `scheduling`, `resource`, `kueue`);
`loader` turns files into records with located errors; `codec` turns records
back into manifests.
"""
