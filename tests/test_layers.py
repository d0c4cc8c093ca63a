"""The packages' layers (docs/layout.md), read from the source with ``ast``: no import circle among our modules, and
no import against the layers: ``l2/format/`` below everything, ``l2/tools/`` on it, ``l3/`` on both, none of the three
touching the simulator side. Every import counts, also one inside a function; an import only for type checking
(``if TYPE_CHECKING:``) does not, as Python never runs it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("l2", "l3")
SIM_SIDE = ("isaaclab", "isaaclab_tasks", "isaaclab_mimic", "isaaclab_rl", "warp", "newton", "mujoco_warp", "torch")
"""Third-party packages of the simulator side (none of them is needed to read or convert a file)."""
LAYERS = {"l2.format": ("l2.format",), "l2.tools": ("l2.format", "l2.tools"), "l3": ("l2.format", "l2.tools", "l3")}
"""A package and the only packages of ours its modules may import."""


def module_files() -> dict[str, Path]:
    files = {}
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            name = ".".join(path.relative_to(REPO).with_suffix("").parts)
            files[name.removesuffix(".__init__")] = path
    return files


def _runtime_nodes(tree: ast.AST):
    """Every node Python may run: the bodies of ``if TYPE_CHECKING:`` left out."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", getattr(node.test, "attr", None)) == "TYPE_CHECKING":
            yield from (n for branch in node.orelse for n in [branch, *_runtime_nodes(branch)])
            continue
        yield node
        yield from _runtime_nodes(node)


def imported_names(name: str, path: Path) -> set[str]:
    """The dotted names a module imports (``from a.b import c`` gives ``a.b.c``; relative imports resolved)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    names = set()
    for node in _runtime_nodes(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, *([node.module] if node.module else [])])
            names.update(f"{base}.{alias.name}" for alias in node.names)
            names.add(base)
    return names


def _ours(dotted: str, files: dict[str, Path]) -> str | None:
    """The module of ours a dotted name is, or is in (``l2.format.schema.OBS`` -> ``l2.format.schema``)."""
    while dotted and dotted not in files:
        dotted = dotted.rpartition(".")[0]
    return dotted or None


def import_graph() -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """Our modules' imports of our modules, and of third-party top-level packages."""
    files = module_files()
    ours, third = {}, {}
    for name, path in files.items():
        names = imported_names(name, path)
        ours[name] = {m for n in names if (m := _ours(n, files)) and m != name}
        third[name] = {n.split(".")[0] for n in names if n.split(".")[0] not in PACKAGES and n}
    return ours, third


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan), each sorted."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_checker_finds_a_circle_and_a_type_checking_import_is_none(tmp_path):
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    module = tmp_path / "m.py"
    module.write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import torch\nelse:\n    import numpy\n"
        "def f():\n    from .sibling import x\n"
    )
    assert imported_names("l2.pkg.m", module) == {"typing", "typing.TYPE_CHECKING", "numpy", "l2.pkg.sibling",
                                                  "l2.pkg.sibling.x"}  # fmt: skip


def test_no_import_circle():
    graph, _ = import_graph()
    assert len(graph) > 100  # the checker reads the packages
    assert circles(graph) == []


@pytest.mark.parametrize("layer", sorted(LAYERS))
def test_no_import_against_the_layers(layer):
    graph, third = import_graph()
    members = [m for m in graph if m == layer or m.startswith(layer + ".")]
    assert members
    allowed = LAYERS[layer]
    against = {
        m: sorted(d for d in graph[m] if not any(d == a or d.startswith(a + ".") for a in allowed)) for m in members
    }
    assert {m: d for m, d in against.items() if d} == {}
    simulator = {m: sorted(third[m] & set(SIM_SIDE)) for m in members}
    assert {m: s for m, s in simulator.items() if s} == {}
