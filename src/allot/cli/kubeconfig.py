"""What reading an API server configuration raises when the configuration is bad, for the commands that
serve a cluster (`allot run`, `allot agent run`) to report as bad input.

lightkube reads kubeconfig files with PyYAML and walks them as plain mappings, so a file that is
not YAML, holds several documents, or has a list where a mapping belongs raises YAML, type or key
errors rather than its own ConfigError. These are caught only around loading the configuration,
never around the scheduler or the agent themselves.
"""

from __future__ import annotations

import yaml

from allot.model.strict_yaml import describe_yaml_error


def config_errors() -> tuple[type[BaseException], ...]:
    """Exception types of a bad configuration (lightkube comes with the serving commands' extras)."""
    from lightkube.core.exceptions import ConfigError

    return (ConfigError, OSError, ValueError, yaml.YAMLError, TypeError, KeyError, AttributeError)


def describe(error: BaseException) -> str:
    """One line for a configuration error (a YAML error's own text spans several)."""
    if isinstance(error, yaml.YAMLError):
        return describe_yaml_error(error)
    return " ".join(str(error).split()) or type(error).__name__
