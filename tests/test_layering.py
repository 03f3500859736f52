"""The floors of gradflow (../shared/LAYOUT.md, docs/architecture.md), checked from the source.

Each module's imports are read with ``ast`` (nothing is imported), and four rules hold:

1. Engine floors. ``framework`` imports nothing else of gradflow; ``ops`` and
   ``runtime`` stand on ``framework`` and not on each other; ``autodiff`` stands on all
   three. No engine module imports the TF1 API floor (``variables``, ``layers``,
   ``train``, ``tools``...) or any other package above it.
2. No module but ``gradflow/__init__.py`` imports the top package (``import gradflow``,
   ``from gradflow import x``).
3. Imports sit at module level. Inside a function or class only an optional third-party
   dependency may be imported, and only under ``except ImportError``.
4. No import circles between gradflow's modules.

``KNOWN_DEFERRED`` lists crossings still tolerated, with the work that removes them (none
since the ops split); a test fails once one is gone, so the list only shrinks.
"""
from __future__ import annotations

import ast
import dataclasses
import pathlib
import textwrap

import pytest

PACKAGE_ROOT = pathlib.Path(__file__).resolve().parent.parent / "gradflow"

# Engine package -> the engine packages it may import (besides itself).
ENGINE_FLOORS = {
    "framework": set(),
    "ops": {"framework"},
    "runtime": {"framework"},
    "autodiff": {"framework", "ops", "runtime"},
}

MAX_MODULE_LINES = 1500

# Modules that mirror the top package's namespace, and so import it (and are imported
# by it): exempt from rules 2 and 4.
TOP_PACKAGE_MIRRORS = {"gradflow.compat.v1": "TF1's namespace, names handed on from gradflow"}

# (importer, imported) module pairs still imported inside functions, and why.
KNOWN_DEFERRED: dict[tuple[str, str], str] = {}


@dataclasses.dataclass(frozen=True)
class Import:
    importer: str  # dotted module name
    target: str    # dotted module name of what is imported
    line: int
    top_package: bool  # written as ``import gradflow`` / ``from gradflow import name``
    deferred: bool     # inside a function or class body
    optional: bool     # inside ``try`` ... ``except ImportError``


def module_name(path: pathlib.Path, root: pathlib.Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def scan(root: pathlib.Path) -> tuple[set[str], list[Import]]:
    """Every module under the package ``root`` and every import each one makes."""
    files = sorted(root.rglob("*.py"))
    modules = {module_name(path, root) for path in files}
    imports = []
    for path in files:
        name = module_name(path, root)
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        imports += _imports_of(tree, name, package, root.name, modules)
    return modules, imports


def _imports_of(tree: ast.Module, name: str, package: str, top: str,
                modules: set[str]) -> list[Import]:
    """The imports in ``tree``, walked iteratively with the context each one sits in."""
    found = []
    stack = [(tree, False, False)]  # (node, inside a def or class, guarded by ImportError)
    while stack:
        node, deferred, optional = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for target, top_package in _targets(node, package, top, modules):
                found.append(Import(name, target, node.lineno, top_package, deferred,
                                    optional))
            continue
        inner = deferred or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef,
                                              ast.ClassDef))
        guarded = optional or (isinstance(node, ast.Try) and _catches_import_error(node))
        stack.extend((child, inner, guarded) for child in ast.iter_child_nodes(node))
    return sorted(found, key=lambda i: i.line)


def _targets(node: ast.Import | ast.ImportFrom, package: str, top: str,
             modules: set[str]) -> list[tuple[str, bool]]:
    """(module imported, written as an import of the top package) for each name."""
    if isinstance(node, ast.Import):
        return [(alias.name, alias.name == top) for alias in node.names]
    base = node.module or ""
    if node.level:
        parts = package.split(".")[:len(package.split(".")) - node.level + 1]
        base = ".".join(parts + ([node.module] if node.module else []))
    # ``from pkg import sub`` imports the module pkg.sub when there is one; names that
    # are attributes of one module count once.
    return list(dict.fromkeys(
        (f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base, base == top)
        for alias in node.names))


def _catches_import_error(node: ast.Try) -> bool:
    names = set()
    for handler in node.handlers:
        kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
        names |= {kind.id for kind in kinds if isinstance(kind, ast.Name)}
    return bool(names & {"ImportError", "ModuleNotFoundError"})


def _floor(module: str) -> str | None:
    """The engine package ``gradflow.<floor>...`` belongs to, or None above the engine."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in ENGINE_FLOORS else None


def floor_violations(imports: list[Import], top: str) -> list[str]:
    """Engine modules importing upwards: a higher engine floor or anything above it."""
    bad = []
    for imp in imports:
        floor = _floor(imp.importer)
        if floor is None or imp.target.split(".")[0] != top:
            continue
        target_floor = _floor(imp.target)
        if target_floor is None:
            bad.append(f"{imp.importer}:{imp.line} imports {imp.target}: the engine "
                       f"({floor}) never imports what stands above it")
        elif target_floor != floor and target_floor not in ENGINE_FLOORS[floor]:
            bad.append(f"{imp.importer}:{imp.line} imports {imp.target}: {floor} may import "
                       f"only {sorted(ENGINE_FLOORS[floor]) or 'itself'}")
    return bad


def top_package_violations(imports: list[Import], top: str) -> list[str]:
    return [f"{imp.importer}:{imp.line} imports the top package {top}; import the module "
            "that defines the name instead"
            for imp in imports if imp.top_package and imp.importer != top and
            imp.importer not in TOP_PACKAGE_MIRRORS]


def deferred_violations(imports: list[Import], top: str) -> list[str]:
    """Imports inside functions or classes, other than optional third-party ones."""
    bad = []
    for imp in imports:
        if not imp.deferred or (imp.optional and imp.target.split(".")[0] != top):
            continue
        if (imp.importer, imp.target) not in KNOWN_DEFERRED:
            bad.append(f"{imp.importer}:{imp.line} imports {imp.target} inside a function "
                       "or class; import at module level (an optional third-party "
                       "dependency goes under try/except ImportError)")
    return bad


def import_circles(imports: list[Import], top: str) -> list[list[str]]:
    """Circles among module-level imports of ``top``'s modules (one per strongly
    connected group, Tarjan's algorithm written iteratively)."""
    edges: dict[str, set[str]] = {}
    for imp in imports:
        if not imp.deferred and imp.target.split(".")[0] == top and \
                imp.target != imp.importer and imp.importer not in TOP_PACKAGE_MIRRORS:
            edges.setdefault(imp.importer, set()).add(imp.target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    circles = []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        group.append(member)
                        if member == node:
                            break
                    if len(group) > 1:
                        circles.append(sorted(group))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(edges.get(child, ())))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return circles


def long_modules(root: pathlib.Path) -> list[str]:
    """Modules of ``root`` longer than ``MAX_MODULE_LINES`` (a family grown that long
    becomes a package of cohesive modules, as ``ops/array/`` did)."""
    long = []
    for path in sorted(root.rglob("*.py")):
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > MAX_MODULE_LINES:
            long.append(f"{path.relative_to(root.parent)}: {lines} lines")
    return long


# ----------------------------------------------------------------- gradflow itself
@pytest.fixture(scope="module")
def gradflow_imports() -> list[Import]:
    return scan(PACKAGE_ROOT)[1]


def test_engine_floors_import_only_downwards(gradflow_imports):
    assert floor_violations(gradflow_imports, "gradflow") == []


def test_no_module_imports_the_top_package(gradflow_imports):
    assert top_package_violations(gradflow_imports, "gradflow") == []


def test_imports_sit_at_module_level(gradflow_imports):
    assert deferred_violations(gradflow_imports, "gradflow") == []


def test_no_import_circles(gradflow_imports):
    assert import_circles(gradflow_imports, "gradflow") == []


def test_no_module_over_the_size_limit():
    assert long_modules(PACKAGE_ROOT) == []


def test_known_deferred_imports_still_exist(gradflow_imports):
    """Once a listed crossing is gone, its entry must go too, so the list only shrinks."""
    present = {(imp.importer, imp.target) for imp in gradflow_imports if imp.deferred}
    assert sorted(set(KNOWN_DEFERRED) - present) == []


def test_every_engine_floor_exists():
    for floor in ENGINE_FLOORS:
        assert (PACKAGE_ROOT / floor / "__init__.py").is_file(), floor


# ------------------------------------------------- the checks catch what they should
def _package(tmp_path: pathlib.Path, files: dict[str, str]) -> list[Import]:
    root = tmp_path / "pkg"
    for relative, source in {"__init__.py": "", **files}.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(source), encoding="utf-8")
    return scan(root)[1]


def test_upward_and_sideways_engine_imports_are_caught(tmp_path):
    imports = _package(tmp_path, {
        "framework/__init__.py": "",
        "framework/graph.py": "from pkg.runtime.session import Session\n",
        "ops/__init__.py": "",
        "ops/math.py": "from pkg.runtime import session\nfrom pkg.framework import graph\n",
        "runtime/__init__.py": "",
        "runtime/session.py": "from pkg.layers import dense\n",
        "autodiff/__init__.py": "",
        "autodiff/grad.py": "from ..ops import math\nfrom pkg.runtime import session\n",
        "layers/__init__.py": "",
        "layers/dense.py": "from pkg.autodiff import grad\n",
    })
    found = floor_violations(imports, "pkg")
    assert [line.split(" ")[0] for line in found] == [
        "pkg.framework.graph:1", "pkg.ops.math:1", "pkg.runtime.session:1"]
    assert "framework may import only itself" in found[0]
    assert "ops may import only ['framework']" in found[1]
    assert "never imports what stands above it" in found[2]


def test_relative_imports_resolve_to_modules_once_per_statement(tmp_path):
    imports = _package(tmp_path, {
        "ops/__init__.py": "", "ops/math.py": "", "ops/nn.py": "from . import math\n",
        "autodiff/__init__.py": "",
        "autodiff/grad.py": "from ..ops.nn import relu, softmax\n"})
    assert sorted((i.importer, i.target) for i in imports) == [
        ("pkg.autodiff.grad", "pkg.ops.nn"), ("pkg.ops.nn", "pkg.ops.math")]


def test_top_package_imports_are_caught(tmp_path):
    imports = _package(tmp_path, {
        "__init__.py": "from pkg import tools\n",
        "tools.py": "import pkg as gf\n",
        "demo.py": "from pkg import tools\n"})
    assert [line.split(" ")[0] for line in top_package_violations(imports, "pkg")] == [
        "pkg.demo:1", "pkg.tools:1"]


def test_deferred_imports_are_caught_except_optional_dependencies(tmp_path):
    imports = _package(tmp_path, {
        "a.py": "", "b.py": """\
            import numpy

            def f():
                from pkg import a
                try:
                    import graphviz
                except ImportError:
                    graphviz = None
                try:
                    import scipy
                except ValueError:
                    pass

            class C:
                import json

            def g():
                try:
                    from pkg.a import x
                except ImportError:
                    pass
            """})
    found = deferred_violations(imports, "pkg")
    assert [line.split(" ")[:3] for line in found] == [
        ["pkg.b:4", "imports", "pkg.a"], ["pkg.b:10", "imports", "scipy"],
        ["pkg.b:15", "imports", "json"], ["pkg.b:19", "imports", "pkg.a"]]


def test_import_circles_are_found(tmp_path):
    imports = _package(tmp_path, {
        "a.py": "from pkg import b\n", "b.py": "from pkg.c import x\n",
        "c.py": "import pkg.a\n", "d.py": "from pkg import e\n",
        "e.py": "def f():\n    from pkg import d\n"})
    assert import_circles(imports, "pkg") == [["pkg.a", "pkg.b", "pkg.c"]]


if __name__ == "__main__":
    # The counts of issue 22: python tests/test_layering.py
    _, found = scan(PACKAGE_ROOT)
    own_deferred = [f"{i.importer}:{i.line} -> {i.target}" for i in found
                    if i.deferred and i.target.split(".")[0] == "gradflow"]
    print(f"modules over {MAX_MODULE_LINES} lines: {len(long_modules(PACKAGE_ROOT))}",
          *long_modules(PACKAGE_ROOT), sep="\n  ")
    print(f"import circles: {len(import_circles(found, 'gradflow'))}")
    print(f"function-level imports of gradflow's own modules: {len(own_deferred)}",
          *own_deferred, sep="\n  ")
