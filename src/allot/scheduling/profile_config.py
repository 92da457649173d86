"""KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1), read whole, as kube-scheduler v1.36 reads it.

Every field is known: an unknown one, a value of the wrong type or out of range is a
`ProfileError` naming the file and the field path (`profiles[0].plugins.filter.enabled[1]
.name`), as kube-scheduler's strict decoding and validation refuse them.

Plugins. The default `multiPoint` list is kube-scheduler's (`profile.DEFAULT_PLUGINS`); a
profile's `multiPoint` and per-point sets are merged with it as kube-scheduler does (an
enabled default plugin keeps its place with the new weight, `disabled` removes, `*`
removes all), and each extension point gets the multiPoint plugins that implement it, after
the ones that point names itself. Score weights come from `score`, else from `multiPoint`;
0 or none means 1. A plugin enabled where it cannot run, twice at one point, or that allot
does not have, is an error that names it.

What allot does with each point:

* `preFilter`, `filter`, `score` (+ `preScore`): the per-pod cycle. A plugin's filter runs
  with its pre-filter and a score with its pre-score (kube-scheduler fails every pod
  otherwise, so such a profile is refused); a pre-filter alone runs alone.
* `postFilter`: DefaultPreemption on or off (with its args); DynamicResources there is
  accepted (allot's preemption already deallocates victims' claims).
* `reserve`, `preBind`: VolumeBinding and DynamicResources keep what their filter found;
  they go with their filter (both or neither), except that DynamicResources may be
  disabled at `filter` alone, where allot's GpuPlacement takes its place and its claims.
* `queueSort` must be PrioritySort and `bind` DefaultBinder (what allot does); `preEnqueue`
  must keep SchedulingGates (allot always honours gates); `permit`, `postBind`,
  `placementGenerate` and `placementScore` take no plugin allot has.

Top-level fields: `percentageOfNodesToScore`, `podInitialBackoffSeconds` and
`podMaxBackoffSeconds` are used; `parallelism`, `leaderElection`, `clientConnection`,
`enableProfiling`, `enableContentionProfiling` and `delayCacheUntilActive` are about the
kube-scheduler process and are checked, then ignored (`allot run` has its own flags);
`extenders` are refused (allot calls no scheduler extender).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from allot.scheduling import plugin_args, registry
from allot.scheduling.profile import (
    DEFAULT_PLUGINS,
    DEFAULT_PREEMPTION_CANDIDATES,
    DEFAULT_SCHEDULER_NAME,
    DEFAULT_SCORE_WEIGHTS,
    Profile,
    ProfileError,
)
from allot.scheduling.registry import (
    BIND,
    EXTENSION_POINTS,
    FILTER,
    PERMIT,
    PLACEMENT_GENERATE,
    PLACEMENT_SCORE,
    POST_BIND,
    POST_FILTER,
    PRE_BIND,
    PRE_ENQUEUE,
    PRE_FILTER,
    PRE_SCORE,
    QUEUE_SORT,
    RESERVE,
    SCORE,
)

API_VERSION = "kubescheduler.config.k8s.io/v1"
KIND = "KubeSchedulerConfiguration"
MULTI_POINT = "multiPoint"
# KubeSchedulerConfiguration's weights are int32.
MAX_SCORE_WEIGHT = 2**31 - 1
# What a plugin factory raises for arguments of the wrong type, value or shape.
_ARGUMENT_ERRORS = (ValueError, TypeError, KeyError, AttributeError, IndexError, ArithmeticError)
_NO_PLUGINS_THERE = (PERMIT, POST_BIND, PLACEMENT_GENERATE, PLACEMENT_SCORE)


@dataclass(frozen=True)
class SchedulerConfig:
    """What allot uses of a KubeSchedulerConfiguration."""

    profiles: dict[str, Profile]
    pod_initial_backoff_seconds: int = 1
    pod_max_backoff_seconds: int = 10


@dataclass
class _Reader:
    source: str

    def fail(self, path: str, message: str) -> ProfileError:
        return ProfileError(f"{self.source}: {path}: {message}" if path else f"{self.source}: {message}")

    def mapping(self, value: Any, path: str, fields: frozenset[str] | set[str]) -> dict[str, Any]:
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise self.fail(path, f"expected a mapping, got {type(value).__name__}")
        for key in value:
            if key not in fields:
                known = ", ".join(sorted(fields))
                raise self.fail(f"{path}.{key}" if path else str(key), f"unknown field (known: {known})")
        return value

    def integer(
        self, value: Any, path: str, *, low: int | None = None, high: int | None = None, detail: str = ""
    ) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(path, f"expected an integer, got {value!r}")
        if (low is not None and value < low) or (high is not None and value > high):
            raise self.fail(path, f"Invalid value: {value}: {detail or f'not in valid range [{low}-{high}]'}")
        return value

    def plugin_name(self, entry: Mapping[str, Any], path: str, *, star: bool = False) -> str:
        """`entry.name`, a plugin allot has (or `*` where `star`)."""
        name = entry.get("name")
        if not isinstance(name, str) or not name:
            raise self.fail(f"{path}.name", "Required value: a plugin name")
        known = registry.known_plugins()
        if name not in known and not (star and name == "*"):
            raise self.fail(
                f"{path}.name", f"allot has no plugin {name!r} (it has: {', '.join(sorted(known))})"
            )
        return name

    def typed(self, value: Any, path: str, kinds: tuple[type, ...]) -> None:
        if value is not None and (
            (isinstance(value, bool) and bool not in kinds) or not isinstance(value, kinds)
        ):
            what = " or ".join(_TYPE_WORDS[k] for k in kinds)
            raise self.fail(path, f"expected {what}, got {value!r}")


_TYPE_WORDS = {bool: "true or false", int: "an integer", float: "a number", str: "a string"}
_TOP = frozenset(
    {
        "apiVersion",
        "kind",
        "parallelism",
        "leaderElection",
        "clientConnection",
        "enableProfiling",
        "enableContentionProfiling",
        "percentageOfNodesToScore",
        "podInitialBackoffSeconds",
        "podMaxBackoffSeconds",
        "profiles",
        "extenders",
        "delayCacheUntilActive",
    }
)
_LEADER_ELECTION = {
    "leaderElect": (bool,),
    "leaseDuration": (str,),
    "renewDeadline": (str,),
    "retryPeriod": (str,),
    "resourceLock": (str,),
    "resourceName": (str,),
    "resourceNamespace": (str,),
}
_CLIENT_CONNECTION = {
    "kubeconfig": (str,),
    "acceptContentTypes": (str,),
    "contentType": (str,),
    "qps": (int, float),
    "burst": (int,),
}
_PROFILE = frozenset({"schedulerName", "percentageOfNodesToScore", "plugins", "pluginConfig"})
_PLUGIN_SET = frozenset({"enabled", "disabled"})
_PLUGIN = frozenset({"name", "weight"})
_PLUGIN_CONFIG = frozenset({"name", "args"})


def read_config(raw: Any, *, source: str) -> SchedulerConfig:
    """The whole configuration; ProfileError for anything kube-scheduler (or allot) would refuse."""
    reader = _Reader(source)
    top = reader.mapping(raw, "", _TOP) if isinstance(raw, dict) else None
    if top is None:
        raise reader.fail("", f"expected a {KIND} mapping, got {type(raw).__name__}")
    api_version = top.get("apiVersion")
    if api_version != API_VERSION:
        raise reader.fail("apiVersion", f"expected {API_VERSION}, got {api_version!r}")
    if top.get("kind") != KIND:
        raise reader.fail("kind", f"expected {KIND}, got {top.get('kind')!r}")
    if "parallelism" in top:
        reader.integer(
            top["parallelism"], "parallelism", low=1, detail="should be an integer value greater than zero"
        )
    for name, fields in (("leaderElection", _LEADER_ELECTION), ("clientConnection", _CLIENT_CONNECTION)):
        section = reader.mapping(top.get(name), name, set(fields))
        for key, kinds in fields.items():
            reader.typed(section.get(key), f"{name}.{key}", kinds)
    for key in ("enableProfiling", "enableContentionProfiling", "delayCacheUntilActive"):
        reader.typed(top.get(key), key, (bool,))
    extenders = top.get("extenders")
    if extenders:
        raise reader.fail(
            "extenders", "allot calls no scheduler extenders; remove them (or run kube-scheduler)"
        )
    percentage = _percentage(reader, top.get("percentageOfNodesToScore"), "percentageOfNodesToScore")
    initial = top.get("podInitialBackoffSeconds", 1)
    reader.integer(initial, "podInitialBackoffSeconds", low=1, detail="must be greater than 0")
    maximum = top.get("podMaxBackoffSeconds", 10)
    reader.integer(
        maximum,
        "podMaxBackoffSeconds",
        low=initial,
        detail="must be greater than or equal to PodInitialBackoffSeconds",
    )
    entries = top.get("profiles")
    if entries is None or entries == []:
        entries = [{}]
    if not isinstance(entries, list):
        raise reader.fail("profiles", f"expected a list, got {type(entries).__name__}")
    profiles: dict[str, Profile] = {}
    queue_sorts: list[tuple[str, ...]] = []
    for i, entry in enumerate(entries):
        profile, queue_sort = _profile(reader, entry, f"profiles[{i}]", percentage)
        if profile.scheduler_name in profiles:
            raise reader.fail(f"profiles[{i}].schedulerName", f"Duplicate value: {profile.scheduler_name!r}")
        if queue_sorts and queue_sort != queue_sorts[0]:
            raise reader.fail(f"profiles[{i}].plugins.queueSort", "must be the same for all profiles")
        queue_sorts.append(queue_sort)
        profiles[profile.scheduler_name] = profile
    return SchedulerConfig(profiles, initial, maximum)


def checked_profiles(raw: Any, *, source: str) -> dict[str, Profile]:
    """The profiles of a KubeSchedulerConfiguration document; ProfileError for anything wrong in it."""
    return read_config(raw, source=source).profiles


def _percentage(reader: _Reader, value: Any, path: str) -> int | None:
    if value is None:
        return None
    return reader.integer(value, path, low=0, high=100)


@dataclass
class _PluginSet:
    enabled: list[tuple[str, int | None]] = field(default_factory=list)
    disabled: list[str] = field(default_factory=list)


def _plugin_set(reader: _Reader, raw: Any, path: str) -> _PluginSet:
    section = reader.mapping(raw, path, _PLUGIN_SET)
    found = _PluginSet()
    for part in ("enabled", "disabled"):
        items = section.get(part)
        if items is None:
            continue
        if not isinstance(items, list):
            raise reader.fail(f"{path}.{part}", f"expected a list, got {type(items).__name__}")
        for j, item in enumerate(items):
            at = f"{path}.{part}[{j}]"
            plugin = reader.mapping(item, at, _PLUGIN) if isinstance(item, dict) else None
            if plugin is None:
                raise reader.fail(
                    at, f"expected {{name: <plugin>, weight: <int>}}, got {type(item).__name__}"
                )
            name = reader.plugin_name(plugin, at, star=part == "disabled")
            weight = plugin.get("weight")
            if weight is not None:
                reader.integer(
                    weight,
                    f"{at}.weight",
                    low=0,
                    high=MAX_SCORE_WEIGHT,
                    detail=f"must be from 0 to {MAX_SCORE_WEIGHT}",
                )
            if part == "enabled":
                found.enabled.append((name, weight))
            else:
                found.disabled.append(name)
    return found


def _merged_multi_point(custom: _PluginSet) -> list[tuple[str, int | None]]:
    """kube-scheduler's mergePluginSet of the default multiPoint list with the profile's."""
    disabled = set(custom.disabled)
    chosen = {name: (i, weight) for i, (name, weight) in enumerate(custom.enabled)}
    merged: list[tuple[str, int | None]] = []
    replaced: set[int] = set()
    if "*" not in disabled:
        for name in DEFAULT_PLUGINS:
            if name in disabled:
                continue
            if name in chosen:
                index, weight = chosen[name]
                merged.append((name, weight))
                replaced.add(index)
            else:
                merged.append((name, DEFAULT_SCORE_WEIGHTS.get(name)))
    merged.extend(entry for i, entry in enumerate(custom.enabled) if i not in replaced)
    return merged


def _expand(
    reader: _Reader, path: str, point: str, own: _PluginSet, multi: list[tuple[str, int | None]]
) -> list[str]:
    """The plugins that run at `point`, in kube-scheduler's order (expandMultiPointPlugins)."""
    named: list[str] = []
    for j, (name, _) in enumerate(own.enabled):
        if point not in registry.points(name):
            raise reader.fail(
                f"{path}.{point}.enabled[{j}].name", f"plugin {name!r} does not extend the {point} point"
            )
        if name in named:
            raise reader.fail(
                f"{path}.{point}.enabled[{j}].name", f"plugin {name!r} already enabled at {point}"
            )
        named.append(name)
    if "*" in own.disabled:
        return named
    overridden: list[str] = []
    from_multi: list[str] = []
    for name, _ in multi:
        if point not in registry.points(name) or name in own.disabled:
            continue
        if name in named:
            overridden.append(name)
            continue
        if name in from_multi:
            raise reader.fail(f"{path}.{MULTI_POINT}", f"plugin {name!r} already enabled at {point}")
        from_multi.append(name)
    first = [n for n in named if n in overridden]
    rest = [n for n in named if n not in overridden]
    return first + from_multi + rest


def _profile(reader: _Reader, raw: Any, path: str, percentage: int | None) -> tuple[Profile, tuple[str, ...]]:
    entry = reader.mapping(raw, path, _PROFILE) if isinstance(raw, dict) else None
    if entry is None:
        raise reader.fail(path, f"expected a mapping, got {type(raw).__name__}")
    name = entry.get("schedulerName", DEFAULT_SCHEDULER_NAME)
    if not isinstance(name, str) or not name:
        raise reader.fail(f"{path}.schedulerName", "Required value: a non-empty string")
    if "percentageOfNodesToScore" in entry:
        percentage = _percentage(
            reader, entry["percentageOfNodesToScore"], f"{path}.percentageOfNodesToScore"
        )
    plugins = reader.mapping(entry.get("plugins"), f"{path}.plugins", {MULTI_POINT, *EXTENSION_POINTS})
    sets = {
        point: _plugin_set(reader, plugins.get(point), f"{path}.plugins.{point}")
        for point in (MULTI_POINT, *EXTENSION_POINTS)
    }
    multi = _merged_multi_point(sets[MULTI_POINT])
    where = f"{path}.plugins"
    for plugin, _ in multi:
        if not registry.points(plugin):
            raise reader.fail(f"{where}.{MULTI_POINT}", f"plugin {plugin!r} has no extension point")
    points = {point: _expand(reader, where, point, sets[point], multi) for point in EXTENSION_POINTS}
    weights = _weights(points[SCORE], sets[SCORE], multi)
    _check_points(reader, where, points, sets)
    args, preemption_candidates = _plugin_config(reader, entry.get("pluginConfig"), path)
    filters = tuple(points[FILTER])
    profile = Profile(
        scheduler_name=name,
        filters=filters,
        score_weights=weights,
        percentage_of_nodes_to_score=percentage,
        plugin_args=args,
        pre_filter_only=tuple(p for p in points[PRE_FILTER] if p not in filters),
        preemption="DefaultPreemption" in points[POST_FILTER],
        claims_post_filter="DynamicResources" in points[POST_FILTER],
        preemption_candidates=preemption_candidates,
    )
    return profile, tuple(points[QUEUE_SORT])


def _weights(scored: list[str], own: _PluginSet, multi: list[tuple[str, int | None]]) -> dict[str, int]:
    """Score weights: the `score` point's, else multiPoint's (the defaults' own weights for
    default entries); 0 or none counts as 1."""
    given: dict[str, int | None] = {}
    for name, weight in own.enabled:
        given.setdefault(name, weight)
    for name, weight in multi:
        given.setdefault(name, weight)
    return {name: given.get(name) or 1 for name in scored if registry.scores(name)}


def _check_points(
    reader: _Reader, where: str, points: Mapping[str, list[str]], sets: Mapping[str, _PluginSet]
) -> None:
    """The arrangements allot can run (see the module docstring); ProfileError naming the plugin."""
    for point in _NO_PLUGINS_THERE:
        # Named there explicitly (NodeResourcesFit reaches placementScore through multiPoint, where
        # kube-scheduler v1.36 uses it only under an alpha gate).
        if sets[point].enabled:
            raise reader.fail(
                f"{where}.{point}",
                f"allot has no {point} plugins; {sets[point].enabled[0][0]!r} cannot be enabled there",
            )
    if points[QUEUE_SORT] != ["PrioritySort"]:
        raise reader.fail(
            f"{where}.{QUEUE_SORT}",
            f"only one queue sort plugin required, PrioritySort (allot's queue order), got {points[QUEUE_SORT]}",
        )
    if not points[BIND]:
        raise reader.fail(f"{where}.{BIND}", "at least one bind plugin is needed (DefaultBinder)")
    if "SchedulingGates" not in points[PRE_ENQUEUE]:
        raise reader.fail(
            f"{where}.{PRE_ENQUEUE}",
            "allot always honours scheduling gates: SchedulingGates cannot be disabled",
        )
    pairs: list[tuple[str, str, Callable[[str], bool]]] = [
        (FILTER, PRE_FILTER, lambda name: True),
        (SCORE, PRE_SCORE, lambda name: True),
        (FILTER, RESERVE, lambda name: name in ("VolumeBinding", "DynamicResources")),
        (FILTER, PRE_BIND, lambda name: name in ("VolumeBinding", "DynamicResources")),
        # DynamicResources' filter may be replaced by allot's GpuPlacement, which then allocates
        # and keeps the claims: its reserve and preBind entries are harmless without it.
        (RESERVE, FILTER, lambda name: name != "DynamicResources"),
        (PRE_BIND, FILTER, lambda name: name != "DynamicResources"),
    ]
    for point, needed, applies in pairs:
        for name in points[point]:
            if applies(name) and needed in registry.points(name) and name not in points[needed]:
                raise reader.fail(
                    f"{where}.{needed}",
                    f"{name} is enabled at {point} but disabled at {needed}; allot runs them together "
                    f"(enable or disable {name} at both)",
                )


def _plugin_config(
    reader: _Reader, raw: Any, path: str
) -> tuple[dict[str, Mapping[str, Any]], tuple[int, int]]:
    args: dict[str, Mapping[str, Any]] = {}
    candidates = DEFAULT_PREEMPTION_CANDIDATES
    if raw is None:
        return args, candidates
    if not isinstance(raw, list):
        raise reader.fail(f"{path}.pluginConfig", f"expected a list, got {type(raw).__name__}")
    for j, item in enumerate(raw):
        at = f"{path}.pluginConfig[{j}]"
        entry = reader.mapping(item, at, _PLUGIN_CONFIG) if isinstance(item, dict) else None
        if entry is None:
            raise reader.fail(at, f"expected {{name: <plugin>, args: {{...}}}}, got {type(item).__name__}")
        name = reader.plugin_name(entry, at)
        if name in args:
            raise reader.fail(at, f"Duplicate value: {name!r}")
        try:
            values = plugin_args.check(name, entry.get("args") or {})
            if name == "DefaultPreemption":
                candidates = plugin_args.preemption(values)
            elif name in registry.REGISTRY:
                registry.build(name, values)
        except plugin_args.ArgumentError as err:
            raise reader.fail(f"{at}.args", str(err)) from None
        except _ARGUMENT_ERRORS as err:
            detail = f"missing {err.args[0]!r}" if isinstance(err, KeyError) and err.args else str(err)
            raise reader.fail(f"{at}.args", detail) from None
        args[name] = values
    return args, candidates
