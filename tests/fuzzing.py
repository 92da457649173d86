"""Shared by the fuzz tests: random structural mutations of parsed YAML documents."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from hypothesis import strategies as st

ACTIONS = ("delete", "odd", "retype", "duplicate", "rename")


def containers(node: Any, found: list[Any]) -> list[Any]:
    """Every dict and list inside `node`, depth first."""
    if isinstance(node, dict | list):
        found.append(node)
        for child in node.values() if isinstance(node, dict) else node:
            containers(child, found)
    return found


def mutate_tree(
    draw: st.DrawFn, root: Any, odd_values: Sequence[Any], actions: Sequence[str] = ACTIONS
) -> None:
    """Apply 1-4 random edits in place: delete a key, put an odd value in, wrap or flatten a value,
    duplicate a list entry, rename a key."""
    for _ in range(draw(st.integers(1, 4))):
        target = draw(st.sampled_from(containers(root, [])))
        if not target:
            continue
        keys = list(target) if isinstance(target, dict) else list(range(len(target)))
        key = draw(st.sampled_from(keys))
        action = draw(st.sampled_from(list(actions)))
        if action == "delete":
            del target[key]
        elif action == "odd":
            target[key] = copy.deepcopy(draw(st.sampled_from(list(odd_values))))
        elif action == "retype":
            value = target[key]
            target[key] = [value] if not isinstance(value, list) else str(value)
        elif action == "duplicate" and isinstance(target, list):
            target.insert(key, copy.deepcopy(target[key]))
        elif action == "rename" and isinstance(target, dict):
            target[str(key) + draw(st.sampled_from(["X", "_", ".", "/x"]))] = target.pop(key)
