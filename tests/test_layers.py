"""The import-linter contracts see every module: each folder under src/allot is a package, each
top-level package has a place in the layers, and no module hides an import behind importlib."""

from __future__ import annotations

import ast
import functools
import importlib.metadata
import re
import subprocess
import sys
import tomllib
from collections.abc import Mapping
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


# Packages that are a feature of their own, and the extra that installs what they import.
FEATURE_EXTRAS = {"allot.live": "live", "allot.agent": "agent", "allot.dashboard": "dashboard"}


def _imports(tree: ast.AST) -> tuple[set[str], set[str]]:
    """(modules imported at module level, modules imported inside functions), top-level names."""
    eager: set[str] = set()
    lazy: set[str] = set()

    def visit(node: ast.AST, inside: bool) -> None:
        for child in ast.iter_child_nodes(node):
            names: list[str] = []
            if isinstance(child, ast.Import):
                names = [alias.name for alias in child.names]
            elif isinstance(child, ast.ImportFrom) and child.level == 0 and child.module:
                names = [child.module]
            (lazy if inside else eager).update(name.split(".")[0] for name in names)
            visit(child, inside or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef))

    visit(tree, False)
    return eager, lazy


def _distribution(requirement: str) -> str:
    return re.split(r"[<>=!~\[; ]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def _unprovided(modules: set[str], allowed: set[str]) -> set[str]:
    """The third-party modules no distribution in `allowed` provides."""
    by_module = _packages_distributions()
    return {
        module
        for module in modules
        if module not in sys.stdlib_module_names
        and module != "allot"
        and not {_distribution(d) for d in by_module.get(module, [module])} & allowed
    }


@functools.cache
def _packages_distributions() -> Mapping[str, list[str]]:
    # Scans every installed distribution: once per run, not once per module.
    return importlib.metadata.packages_distributions()


def _providers(modules: set[str], declared: set[str]) -> set[str]:
    by_module = _packages_distributions()
    return {_distribution(d) for module in modules for d in by_module.get(module, [])} & declared


def test_runtime_dependencies_are_exactly_what_the_package_imports() -> None:
    """`pip install .` brings what allot imports; a feature that imports more (the live scheduler,
    the node agent) names it in its extra, and code outside it imports that only lazily."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = {_distribution(r) for r in project["dependencies"]}
    extras = {
        name: {_distribution(r) for r in reqs} for name, reqs in project["optional-dependencies"].items()
    }
    # A lazy import may come from any user-facing extra (`ray` for `--ray` sweeps), not from `test`.
    any_extra = set().union(*(reqs for name, reqs in extras.items() if name != "test"))
    used: set[str] = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        module = _module_name(path)
        feature = next(
            (e for p, e in FEATURE_EXTRAS.items() if module == p or module.startswith(p + ".")), None
        )
        eager, lazy = _imports(ast.parse(path.read_text(encoding="utf-8")))
        allowed = declared | (extras[feature] if feature else set())
        assert not _unprovided(eager, allowed), f"{module} imports what its install lacks"
        assert not _unprovided(lazy, allowed | any_extra), f"{module} imports what no extra installs"
        if feature is None:
            used |= _providers(eager, declared)
    assert declared - used == set(), "a runtime dependency that only features use belongs in their extra"
    assert any(
        _distribution(r) == "allot" and "live" in r and "agent" in r
        for r in project["optional-dependencies"]["test"]
    )


def test_the_command_runs_without_the_extras() -> None:
    """With none of the extras' modules importable, `allot` still loads and runs; `allot run` says
    which extra it needs."""
    blocked = ("lightkube", "httpx2", "aiohttp", "prometheus_client", "pynvml")
    code = (
        "import sys\n"
        f"for name in {blocked!r}: sys.modules[name] = None\n"
        "from allot.cli.main import main\n"
        "sys.argv = ['allot', *sys.argv[1:]]\n"
        "main()\n"
    )
    validate = subprocess.run(
        [sys.executable, "-c", code, "validate", str(ROOT / "examples" / "cluster")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert validate.returncode == 0, validate.stderr
    run = subprocess.run([sys.executable, "-c", code, "run"], capture_output=True, text=True, timeout=120)
    assert run.returncode == 1 and "allot run needs the live extra" in run.stderr
