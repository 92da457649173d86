"""The record base class and the metadata every Kubernetes object carries.

Records are frozen msgspec structs whose field names are the snake_case form
of the API's camelCase JSON names. Lists are tuples and optional fields
default to None or an empty container, so an object decoded from a manifest
and dumped again prints only what was there (plus API-server defaults).

Maps (labels, capacities, attributes) are plain dicts inside frozen records:
nothing in allot mutates a record after decoding; a changed object is a new
record made with `msgspec.structs.replace`.
"""

from __future__ import annotations

from typing import ClassVar

import msgspec


class Record(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, rename="camel"):
    """Base of every API record: immutable, keyword-only, camelCase on the wire."""


class Object(Record, frozen=True):
    """A top-level Kubernetes object: something with apiVersion, kind and metadata.

    Subclasses set `API_GROUP`, `KIND` and `NAMESPACED`; `api_version` and
    `kind` keep whatever the manifest said so that a v1beta1 Kueue object
    dumps back as v1beta1.
    """

    API_GROUP: ClassVar[str] = ""
    KIND: ClassVar[str] = ""
    NAMESPACED: ClassVar[bool] = False
    # Versions this kind is served under; the first is what new objects get.
    API_VERSIONS: ClassVar[tuple[str, ...]] = ("v1",)
    # Configuration files (not API objects) may come without metadata.
    NAME_REQUIRED: ClassVar[bool] = True

    api_version: str = ""
    kind: str = ""
    metadata: ObjectMeta = msgspec.field(default_factory=lambda: ObjectMeta())

    @property
    def name(self) -> str:
        return self.metadata.name

    @property
    def namespace(self) -> str:
        return self.metadata.namespace

    @property
    def key(self) -> str:
        """`namespace/name` for namespaced objects, `name` otherwise."""
        if self.NAMESPACED:
            return f"{self.metadata.namespace}/{self.metadata.name}"
        return self.metadata.name

    @classmethod
    def default_api_version(cls) -> str:
        version = cls.API_VERSIONS[0]
        return f"{cls.API_GROUP}/{version}" if cls.API_GROUP else version


class OwnerReference(Record, frozen=True):
    api_version: str = ""
    kind: str = ""
    name: str = ""
    uid: str = ""
    controller: bool | None = None
    block_owner_deletion: bool | None = None


class ObjectMeta(Record, frozen=True):
    name: str = ""
    generate_name: str = ""
    namespace: str = ""
    uid: str = ""
    resource_version: str = ""
    generation: int = 0
    creation_timestamp: str | None = None
    deletion_timestamp: str | None = None
    labels: dict[str, str] = msgspec.field(default_factory=dict)
    annotations: dict[str, str] = msgspec.field(default_factory=dict)
    owner_references: tuple[OwnerReference, ...] = ()
    finalizers: tuple[str, ...] = ()


class LabelSelectorRequirement(Record, frozen=True):
    key: str = ""
    operator: str = ""
    values: tuple[str, ...] = ()


class LabelSelector(Record, frozen=True):
    """metav1.LabelSelector: matchLabels AND matchExpressions; empty selects everything."""

    match_labels: dict[str, str] = msgspec.field(default_factory=dict)
    match_expressions: tuple[LabelSelectorRequirement, ...] = ()


class Condition(Record, frozen=True):
    """A status condition, in the shape core/v1 and metav1 share."""

    type: str = ""
    status: str = ""
    reason: str = ""
    message: str = ""
    last_transition_time: str | None = None
    observed_generation: int | None = None
