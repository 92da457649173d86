"""Hardware presets: Nodes and ResourceSlices exactly as real drivers publish them.

* `catalog`: the machines as data (DGX H100/H200, AWS p4d, a PCIe L40S
  server): GPUs, NICs and CPU sockets with their PCIe roots and NUMA nodes;
* `devices`, `nodes`, `slices`, `classes`: the records the NVIDIA GPU
  driver, DRANET and dra-driver-cpu publish for them, the Node a kubelet
  registers, the drivers' DeviceClasses and a Kueue Topology;
* `gpu_sharing`: fractional GPUs with consumable capacity, MIG partitions
  with counter sets, time-sliced GPUs (the non-whole GPU modes);
* `expand`: `expand_preset(name, nodes=N, ...)` from code,
  `expand_spec`/`expand_specs` for scenario files; `allot preset` prints
  the same objects.
"""
