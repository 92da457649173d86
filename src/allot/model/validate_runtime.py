"""node.k8s.io/v1 RuntimeClass validation, and pods that contradict the class they name.

Rules and wording follow pkg/apis/node/validation and the RuntimeClass admission plugin
(plugin/pkg/admission/runtimeclass). Nothing here raises.
"""

from __future__ import annotations

from collections.abc import Sequence

from allot.model.base import Object
from allot.model.core import Pod
from allot.model.errors import Location, ManifestError
from allot.model.runtime import RuntimeClass, runtime_class_conflicts
from allot.model.validate_common import Problems, dns_label
from allot.model.validate_core import check_resource_list, check_tolerations
from allot.model.validate_registry import register, register_set


@register(RuntimeClass)
def validate_runtime_class(runtime_class: RuntimeClass, where: Location) -> list[ManifestError]:
    problems = Problems(where)
    if not runtime_class.handler:
        problems.required("handler")
    else:
        problems.each("handler", runtime_class.handler, dns_label(runtime_class.handler))
    if runtime_class.overhead is not None:
        check_resource_list(problems, "overhead.podFixed", runtime_class.overhead.pod_fixed)
    if runtime_class.scheduling is not None:
        problems.labels("scheduling.nodeSelector", runtime_class.scheduling.node_selector)
        check_tolerations(problems, "scheduling.tolerations", runtime_class.scheduling.tolerations)
    return problems.errors


@register_set
def validate_runtime_class_pods(entries: Sequence[tuple[Object, Location]]) -> list[ManifestError]:
    """A pod not yet admitted whose node selector contradicts its RuntimeClass's (the API server
    rejects it on creation); checked when the RuntimeClass is among the manifests."""
    classes = {obj.name: obj for obj, _ in entries if isinstance(obj, RuntimeClass)}
    errors: list[ManifestError] = []
    for obj, where in entries:
        if not isinstance(obj, Pod) or not obj.spec.runtime_class_name:
            continue
        runtime_class = classes.get(obj.spec.runtime_class_name)
        if runtime_class is None or runtime_class.scheduling is None:
            continue
        problems = Problems(where)
        for key in runtime_class_conflicts(obj, runtime_class):
            problems.forbidden(
                f"spec.nodeSelector[{key}]",
                f"conflict: runtimeClass.scheduling.nodeSelector[{key}] = "
                f"{runtime_class.scheduling.node_selector[key]}; pod.spec.nodeSelector[{key}] = "
                f"{obj.spec.node_selector[key]}",
            )
        errors.extend(problems.errors)
    return errors
