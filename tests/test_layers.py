"""The import-linter contracts see every module: each folder under src/allot is a package, each
top-level package has a place in the layers, and no module hides an import behind importlib."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "src" / "allot"


def _folders() -> list[Path]:
    return sorted(
        path
        for path in [PACKAGE, *PACKAGE.rglob("*")]
        if path.is_dir() and path.name != "__pycache__" and not path.name.endswith(".egg-info")
    )


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_every_folder_is_a_package() -> None:
    missing = [
        str(folder.relative_to(ROOT)) for folder in _folders() if not (folder / "__init__.py").is_file()
    ]
    assert not missing, f"folders without __init__.py (invisible to import-linter): {missing}"


def test_the_import_graph_holds_every_module() -> None:
    graph = grimp.build_graph("allot")
    modules = {_module_name(path) for path in PACKAGE.rglob("*.py")}
    assert modules - set(graph.modules) == set()


def test_every_top_level_package_has_a_layer() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    contracts = config["tool"]["importlinter"]["contracts"]
    layers = next(c["layers"] for c in contracts if c["type"] == "layers")
    named = {name.strip() for layer in layers for name in layer.split("|")}
    packages = {f"allot.{p.name}" for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    assert packages - named == set()


def test_no_module_imports_through_importlib() -> None:
    """`importlib.import_module` and `__import__` hide a dependency from import-linter and mypy."""
    hidden: list[str] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                func = node.func
                name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                if name in ("import_module", "__import__"):
                    hidden.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not hidden


def _top_level_imports() -> set[str]:
    found: set[str] = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.split(".")[0])
    return found


def _distribution(requirement: str) -> str:
    return re.split(r"[<>=!~\[; ]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def test_runtime_dependencies_are_exactly_what_the_package_imports() -> None:
    """`pip install .` brings what allot imports; features that import more name them in extras."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = {_distribution(r) for r in project["dependencies"]}
    by_module = importlib.metadata.packages_distributions()
    imported = {
        _distribution(dist)
        for module in _top_level_imports()
        for dist in by_module.get(module, [])
        if module not in sys.stdlib_module_names and module != "allot"
    }
    assert imported - declared == set(), "imported but not a runtime dependency"
    assert declared - imported == set(), "a runtime dependency nothing imports (move it to an extra)"
    extras = project["optional-dependencies"]
    assert {"live", "agent"} <= set(extras)
    assert any(_distribution(r) == "allot" and "live" in r and "agent" in r for r in extras["test"])
