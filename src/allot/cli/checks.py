"""Cross-object checks that need layers above the model (CEL, quota tree).

`allot validate` and every command that reads manifests run these after
loading, so a selector that does not compile is reported before any
scheduling starts.
"""

from __future__ import annotations

from allot.admission.validate import check_quota_tree
from allot.cel.validate import check_selectors
from allot.model.errors import ManifestError
from allot.model.loader import Manifests


def check_manifests(manifests: Manifests) -> list[ManifestError]:
    """Every problem that the model's own validation cannot see."""
    problems: list[ManifestError] = []
    problems.extend(check_selectors(manifests))
    problems.extend(check_quota_tree(manifests))
    return problems
