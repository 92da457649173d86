"""Reading scheduler profiles (KubeSchedulerConfiguration YAML) for the commands that take --config."""

from __future__ import annotations

from pathlib import Path

import yaml

from allot.cli.exits import bad_input
from allot.model.strict_yaml import describe_yaml_error, load_yaml
from allot.scheduling.profile import Profile, ProfileError
from allot.scheduling.profile_config import SchedulerConfig, read_config


def load_config(path: Path, *, not_done: str) -> SchedulerConfig:
    """The whole KubeSchedulerConfiguration; a file that cannot be read or used is bad input (exit 1)."""
    try:
        raw = load_yaml(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:  # ValueError: undecodable text
        bad_input([f"{path}: cannot read: {err}"], not_done)
    except yaml.YAMLError as err:
        bad_input([f"{path}: {describe_yaml_error(err)}"], not_done)
    try:
        return read_config(raw, source=str(path))
    except ProfileError as err:
        bad_input([err], not_done)


def load_profiles(path: Path, *, not_done: str) -> dict[str, Profile]:
    """Profiles by scheduler name (see `load_config`)."""
    return load_config(path, not_done=not_done).profiles
