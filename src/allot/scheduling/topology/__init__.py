"""Topology-aware placement: device alignment inside a node, topology domains across nodes.

* `places`, `alignment`: where a device sits (PCIe root, NUMA node) and how
  well a set of devices used together is aligned;
* `view`, `planner`, `choice`: preferred alignment, the device chooser
  DynamicResources uses on the node a pod goes to (`alignment: preferred`);
* `plugins/topology_alignment.py` (node score) estimates with the same planner;
* `domains`, `tas`: Kueue Topology Aware Scheduling for gangs
  (`place_gang_in_topology`);
* `penalties`, `metrics`: alignment rate and modeled throughput, for
  simulator reports.
"""
