"""The package's shape, read statically with ``ast``: no import circles, no module over 600 lines, no function over 60.

What counts as an import of module ``A`` by module ``B`` (an edge ``B -> A``):

- every ``import answer_eval.x.y`` and ``from answer_eval.x import y`` (``y`` a module: an edge to
  ``answer_eval.x.y``; a name: an edge to ``answer_eval.x``), and relative imports resolved the same way;
- at module level and inside functions alike (a function-level import is a circle deferred to run
  time, not a circle removed); both are checked, and reported separately;
- not the imports under ``if TYPE_CHECKING:`` (never run);
- not the implicit import of a module's parent packages: importing ``answer_eval.inputs.jsonl`` runs
  ``answer_eval/__init__.py``, the package's public façade, which imports its public names; counting
  that would make every module of the package part of one circle with the façade.

A function's length is its lines from its first decorator to its last line, its docstring not counted;
a nested function counts in the function that holds it too. The component package
(``haystack_integrations``) is outside these limits.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from tests.conftest import ROOT

PACKAGE = ROOT / "src" / "answer_eval"
# 600, not 400: at 400 the cap, not the idea, shaped modules (issue 40's review found 15 just under it and
# one job split over many files); a module holds one idea whole, a few hundred lines being normal.
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 60


def _modules(package: Path = PACKAGE) -> dict[str, Path]:
    found = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _imports(name: str, path: Path, modules: dict[str, Path]) -> Iterator[tuple[str, bool]]:
    """Every module of the package ``name`` imports, with whether the import runs at module level."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]

    def targets(node: ast.Import | ast.ImportFrom) -> list[str]:
        if isinstance(node, ast.Import):
            return [alias.name for alias in node.names]
        base = node.module or ""
        if node.level:
            kept = package.split(".")[: len(package.split(".")) - (node.level - 1)]
            base = ".".join([*kept, base] if base else kept)
        return [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]

    def visit(node: ast.AST, top: bool) -> Iterator[tuple[str, bool]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                continue
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                yield from ((target, top) for target in targets(child) if target in modules and target != name)
            inner = top and not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            yield from visit(child, inner)

    yield from visit(ast.parse(path.read_text(encoding="utf-8")), True)


def import_graph(module_level_only: bool, package: Path = PACKAGE) -> dict[str, set[str]]:
    """Module name -> the package's modules it imports (at module level only, or anywhere)."""
    modules = _modules(package)
    return {
        name: {target for target, top in _imports(name, path, modules) if top or not module_level_only}
        for name, path in modules.items()
    }


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's, iterative), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def function_lengths(package: Path = PACKAGE) -> Iterator[tuple[int, str]]:
    """``(lines, "path:line name")`` for every function and method, its docstring not counted."""
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            first = node.body[0]
            docstring = (
                first.end_lineno - first.lineno + 1
                if isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
                else 0
            )
            start = min([node.lineno, *(decorator.lineno for decorator in node.decorator_list)])
            lines = node.end_lineno - start + 1 - docstring
            yield lines, f"{path.relative_to(package.parent)}:{node.lineno} {node.name}"


def test_no_import_circles_at_module_level():
    assert circles(import_graph(module_level_only=True)) == []


def test_no_import_circles_counting_imports_inside_functions():
    assert circles(import_graph(module_level_only=False)) == []


def test_the_circle_finder_finds_a_circle_through_a_function_level_import(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from pkg.b import thing\n")
    (package / "b.py").write_text("def thing():\n    from pkg import c\n")
    (package / "c.py").write_text("import pkg.a\n")
    (package / "d.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import a\n")
    assert circles(import_graph(module_level_only=False, package=package)) == [["pkg.a", "pkg.b", "pkg.c"]]
    assert circles(import_graph(module_level_only=True, package=package)) == []


def test_no_module_is_over_600_lines():
    sizes = {
        str(path.relative_to(PACKAGE.parent)): len(path.read_text().splitlines()) for path in PACKAGE.rglob("*.py")
    }
    assert {path: lines for path, lines in sizes.items() if lines > MAX_MODULE_LINES} == {}


def test_no_function_is_over_60_lines_docstring_aside():
    assert [found for found in function_lengths() if found[0] > MAX_FUNCTION_LINES] == []


def test_the_length_counter_leaves_the_docstring_out(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    body = "\n".join(f"    x{n} = {n}" for n in range(3))
    (package / "m.py").write_text(f'@staticmethod\ndef f():\n    """Doc.\n\n    More.\n    """\n{body}\n')
    assert list(function_lengths(package)) == [(5, "pkg/m.py:2 f")]
