"""A real Kubernetes control plane for tests: etcd, kube-apiserver, and on request the
controller manager and kube-scheduler, on loopback, with DRA's feature gates on.

The binaries come from `../shared/k8s/` (unpacked by its `install.sh`); tests find them
the way envtest does, through `KUBEBUILDER_ASSETS` (or `ALLOT_K8S_BIN`), and skip with
a message where neither names a folder holding them. See `ControlPlane` for the API and
`fixtures` for the pytest fixtures.
"""

from controlplane.plane import (
    DRA_FEATURE_GATES,
    ControlPlane,
    ControlPlaneError,
    binaries_folder,
    skip_reason,
)

__all__ = ["DRA_FEATURE_GATES", "ControlPlane", "ControlPlaneError", "binaries_folder", "skip_reason"]
