"""Hardware presets: Nodes and ResourceSlices exactly as real drivers publish them.

`nodes` (DGX H100/H200, HGX p4d, PCIe L40S, CPU devices per NUMA node) and
`gpu_sharing` (fractional GPUs with consumable capacity, MIG partitions with
counter sets, time-sliced GPUs) produce model records; scenario files and
`allot preset` expand them.
"""
