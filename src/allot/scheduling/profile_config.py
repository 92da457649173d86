"""Profiles from a user's KubeSchedulerConfiguration, with every plugin's arguments checked up front.

`profiles_from_config` reads the profiles' shape; the arguments in
`pluginConfig` are only understood by the plugins themselves, which read
them when a scheduler is built, long after the file was read. Building
each plugin a profile uses once, here, turns a bad argument into a
`ProfileError` that names the file, the profile and the plugin, before any
scheduling starts.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from allot.scheduling import registry
from allot.scheduling.profile import Profile, ProfileError, profiles_from_config

# KubeSchedulerConfiguration's weights are int32.
MAX_SCORE_WEIGHT = 2**31 - 1
# What a plugin factory raises for arguments of the wrong type, value or shape (int(inf) is an
# OverflowError, an ArithmeticError).
_ARGUMENT_ERRORS = (ValueError, TypeError, KeyError, AttributeError, IndexError, ArithmeticError)


# The nested lists and mappings of a KubeSchedulerConfiguration that profiles are read from.
_POINT: dict[str, Any] = {"enabled": [{}], "disabled": [{}]}
_SHAPE: dict[str, Any] = {
    "profiles": [
        {
            "plugins": {point: _POINT for point in ("multiPoint", "filter", "score")},
            "pluginConfig": [{"args": {}}],
        }
    ]
}


def checked_profiles(raw: Any, *, source: str) -> dict[str, Profile]:
    """The profiles of a KubeSchedulerConfiguration document; ProfileError for anything wrong in it."""
    if isinstance(raw, dict):
        check_shape(raw, _SHAPE, source=source, path="")
    try:
        profiles = profiles_from_config(raw, known_plugins=registry.known_plugins(), source=source)
    except (TypeError, AttributeError) as err:  # a shape the reader did not expect
        raise ProfileError(f"{source}: not a KubeSchedulerConfiguration allot can read ({err})") from None
    check_plugin_args(profiles, source=source)
    return profiles


def check_shape(value: Any, shape: Any, *, source: str, path: str) -> None:
    """ProfileError at the first field that is not the list or mapping `shape` says it is (absent and
    null fields are the reader's business). A shape `{}` or `[{}]` accepts any mapping, or any list
    of mappings."""
    if value is None:
        return
    if isinstance(shape, list):
        if not isinstance(value, list):
            raise ProfileError(f"{source}: {path}: expected a list, got {type(value).__name__}")
        for index, item in enumerate(value):
            check_shape(item, shape[0], source=source, path=f"{path}[{index}]")
        return
    if not isinstance(value, dict):
        raise ProfileError(f"{source}: {path}: expected a mapping, got {type(value).__name__}")
    for key, inner in shape.items():
        check_shape(value.get(key), inner, source=source, path=f"{path}.{key}" if path else key)


def check_plugin_args(profiles: Mapping[str, Profile], *, source: str) -> None:
    """Check score weights and build every plugin each profile uses with its arguments; ProfileError
    for the first that fails."""
    known = registry.known_plugins()
    for profile in profiles.values():
        for name, weight in sorted(profile.score_weights.items()):
            if weight > MAX_SCORE_WEIGHT:
                raise ProfileError(
                    f"{source}: profile {profile.scheduler_name!r}: plugins.score {name} weight: expected at "
                    f"most {MAX_SCORE_WEIGHT} (an int32, as kube-scheduler), got {weight}"
                )
        used = set(profile.filters) | set(profile.score_weights) | set(profile.plugin_args)
        for name in sorted(used & known):
            try:
                registry.build(name, profile.plugin_args.get(name, {}))
            except _ARGUMENT_ERRORS as err:
                detail = f"missing {err.args[0]!r}" if isinstance(err, KeyError) and err.args else str(err)
                raise ProfileError(
                    f"{source}: profile {profile.scheduler_name!r}: pluginConfig {name} args: {detail}"
                ) from None
