"""Rewrite older served versions of resource.k8s.io objects into the v1 shape.

resource.k8s.io/v1beta1 wraps a device's fields in `basic` and puts a
request's class, selectors and count directly on the request instead of in
`exactly`. v1beta2 already has the v1 shape. Converting the raw data before
decoding lets one set of records serve every version, as the API server's
conversion does.
"""

from __future__ import annotations

from typing import Any

_EXACT_REQUEST_FIELDS = (
    "deviceClassName",
    "selectors",
    "allocationMode",
    "count",
    "adminAccess",
    "tolerations",
    "capacity",
)


def _device_from_v1beta1(device: Any) -> Any:
    if not isinstance(device, dict) or not isinstance(device.get("basic"), dict):
        return device
    converted = {k: v for k, v in device.items() if k != "basic"}
    converted.update(device["basic"])
    return converted


def _request_from_v1beta1(request: Any) -> Any:
    if not isinstance(request, dict) or "exactly" in request or request.get("firstAvailable"):
        return request
    exact = {k: request[k] for k in _EXACT_REQUEST_FIELDS if k in request}
    converted = {k: v for k, v in request.items() if k not in _EXACT_REQUEST_FIELDS}
    if exact:
        converted["exactly"] = exact
    return converted


def _claim_spec_from_v1beta1(spec: Any) -> Any:
    if not isinstance(spec, dict):
        return spec
    devices = spec.get("devices")
    if not isinstance(devices, dict) or not isinstance(devices.get("requests"), list):
        return spec
    requests = [_request_from_v1beta1(r) for r in devices["requests"]]
    return {**spec, "devices": {**devices, "requests": requests}}


def to_v1_shape(raw: dict[str, Any]) -> dict[str, Any]:
    """The v1 form of a resource.k8s.io/v1beta1 object; other objects are returned unchanged."""
    if raw.get("apiVersion") != "resource.k8s.io/v1beta1":
        return raw
    kind = raw.get("kind")
    spec = raw.get("spec")
    if not isinstance(spec, dict):
        return raw
    if kind == "ResourceSlice" and isinstance(spec.get("devices"), list):
        return {**raw, "spec": {**spec, "devices": [_device_from_v1beta1(d) for d in spec["devices"]]}}
    if kind == "ResourceClaim":
        return {**raw, "spec": _claim_spec_from_v1beta1(spec)}
    if kind == "ResourceClaimTemplate" and isinstance(spec.get("spec"), dict):
        return {**raw, "spec": {**spec, "spec": _claim_spec_from_v1beta1(spec["spec"])}}
    return raw
