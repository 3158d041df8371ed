"""The packages import one way, orchestration -> assets/expectations -> jobs -> windowing_core,
and no module imports itself back through others, counting imports inside functions too (an
import moved into a function hides a cycle from Python, not from the reader)."""

from __future__ import annotations

import ast
import tomllib
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LAYER = {"windowing_core": 0, "jobs": 1, "assets": 2, "expectations": 2, "orchestration": 3}


def _modules() -> dict[str, Path]:
    found = {}
    for package in LAYER:
        for path in (ROOT / package).rglob("*.py"):
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
            found[name] = path
    return found


def _imports(path: Path, modules: dict[str, Path]) -> set[str]:
    """The project's modules ``path`` imports anywhere in it (``from jobs import x`` is ``jobs.x``
    where that is a module)."""
    named = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            named |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            named |= {f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in modules else node.module
                      for a in node.names}
    return {name for name in named if name in modules}


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(path, modules) - {name} for name, path in modules.items()}


def test_no_module_imports_itself_back():
    try:
        TopologicalSorter(_graph()).prepare()
    except CycleError as cycle:
        raise AssertionError(f"an import cycle: {' -> '.join(cycle.args[1])}") from None


def test_packages_import_only_the_layers_below():
    upward = [f"{a} -> {b}" for a, targets in sorted(_graph().items()) for b in sorted(targets)
              if a.split(".")[0] != b.split(".")[0] and LAYER[b.split(".")[0]] >= LAYER[a.split(".")[0]]]
    assert not upward, upward


def test_the_graph_sees_imports_inside_functions():
    """The check above is only as good as its reading of the code: a function-level import counts."""
    graph = _graph()
    assert "jobs.runtime.progress" in graph["jobs.cli"]  # imported inside ``jobs.cli``'s functions only
    assert "windowing_core.config" in graph["jobs.sliding_windows"]


def test_every_package_folder_is_installed():
    """A folder split out of a package (``jobs/online``) must be in pyproject.toml's package
    list too, or an install that is not editable leaves it out."""
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    folders = {".".join(p.parent.relative_to(ROOT).parts) for package in LAYER
               for p in (ROOT / package).rglob("__init__.py")}
    assert folders <= listed, sorted(folders - listed)
