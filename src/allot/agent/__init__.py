"""The node agent (`allot agent`): discovers a node's GPUs, NICs and CPUs and publishes them as
ResourceSlices with the presets' attribute names, and keeps them true (docs/agent.md).

Discovery, each source behind an interface that a recording can stand in for:

* `inventory`: the raw records (NVML's GPUs and MIG devices, sysfs's PCI functions, interfaces,
  RDMA devices, NUMA nodes) and the recording file format;
* `gpu_source` (the interface, and its replay), `nvml` (nvidia-ml-py, imported lazily),
  `sysfs`, `pci_names`, `sources` (live or recorded, section by section);
* `node`: the two joined into one record per published device (what the kubelet plugin maps
  an allocated device back to), with each GPU's sharing mode.

Publishing and keeping true: `slices` (the presets' builders), `health` (events and states to
device taints), `publisher` (server-side apply, generations, stale slices), `metrics`,
`runner` (the loop), `client` and `service` (the process).
"""
