"""Reading scheduler profiles (KubeSchedulerConfiguration YAML) for the commands that take --config."""

from __future__ import annotations

from pathlib import Path

import click
import yaml

from allot.scheduling.profile import Profile, ProfileError, profiles_from_config
from allot.scheduling.registry import known_plugins


def load_profiles(path: Path) -> dict[str, Profile]:
    """Profiles by scheduler name; a bad file is a usage error naming the file and field."""
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as err:
        raise click.BadParameter(f"{path}: {err}", param_hint="--config") from None
    try:
        return profiles_from_config(raw, known_plugins=known_plugins(), source=str(path))
    except ProfileError as err:
        raise click.BadParameter(str(err), param_hint="--config") from None
