"""Pictures of graphs: ``to_dot`` writes Graphviz DOT text, ``render`` turns it into SVG/PNG.

Ops are grouped into clusters by name scope. Gradient ops (those ``gf.gradients``
made, found through their ``original_op``) sit in the clusters of their gradient call
(``gradients/``, ``gradients_1/``...) and are coloured apart from forward ops; variable
updates (optimizer steps, assignments) have a third colour. Rendering needs Graphviz's
``dot`` program; without it, ``render`` raises :class:`GraphvizNotFoundError`.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from typing import Iterable, Optional, Union

from gradflow.framework.graph import Graph, Operation, Tensor, get_default_graph

__all__ = ["to_dot", "render", "graphviz_available", "GraphvizNotFoundError"]

_FORWARD = {"fillcolor": "#dbe9f6", "color": "#4a78a8"}
_GRADIENT = {"fillcolor": "#fde0c5", "color": "#c4661f"}
_UPDATE = {"fillcolor": "#d7efd2", "color": "#3f8a3a"}
_SOURCE_SHAPES = {"VariableV2": "cylinder", "Placeholder": "invhouse",
                  "PlaceholderWithDefault": "invhouse", "Const": "ellipse"}
_UPDATE_PREFIXES = ("Apply", "SparseApply", "Assign", "Scatter")
_FORMATS = ("svg", "png", "pdf")


class GraphvizNotFoundError(RuntimeError):
    """Raised by :func:`render` when Graphviz's ``dot`` program is not installed."""


def graphviz_available() -> bool:
    """Whether Graphviz's ``dot`` program is on the PATH (needed to render pictures)."""
    return shutil.which("dot") is not None


def to_dot(graph_or_ops: Union[Graph, Iterable, None] = None, *, title: Optional[str] = None,
           show_shapes: bool = True, group_scopes: bool = True, rankdir: str = "TB") -> str:
    """The DOT source of a graph, or of some of its ops.

    Args:
      graph_or_ops: a Graph (default: the default graph) or a list of ops/tensors; with a
        list, only the edges between the listed ops are drawn.
      title: a caption for the picture.
      show_shapes: label data edges with the static shape of the tensor they carry.
      group_scopes: draw name scopes as clusters (gradient scopes always are).
      rankdir: Graphviz layout direction, "TB" (top to bottom) or "LR".
    """
    ops = _collect_ops(graph_or_ops)
    gradient_scopes = _gradient_scopes(ops)
    included = set(ops)
    lines = ["digraph gradflow {", f"  rankdir={_quote(rankdir)};",
             '  node [style="filled,rounded", shape=box, fontname="Helvetica", fontsize=10];',
             '  edge [fontname="Helvetica", fontsize=8, color="#555555"];']
    if title:
        lines.append(f"  label={_quote(title)}; labelloc=t; fontsize=14;")
    tree = _ScopeTree()
    used_scopes = {op.name.rpartition("/")[0] for op in ops}
    for op in ops:
        kind = _kind(op, gradient_scopes)
        scope = _scope_of(op, used_scopes) if group_scopes or kind is _GRADIENT else ""
        tree.add(scope, _node(op, kind), kind is _GRADIENT)
    lines += tree.render()
    for op in ops:
        lines += _edges(op, included, show_shapes, gradient_scopes)
    lines.append("}")
    return "\n".join(lines) + "\n"


def render(dot_source: str, path: str, format: Optional[str] = None) -> str:  # noqa: A002
    """Writes the picture described by ``dot_source`` to ``path``; returns ``path``.

    The format is ``format`` or ``path``'s extension: svg, png or pdf. Uses the
    ``graphviz`` Python package when installed (``pip install gradflow[graphviz]``),
    else runs ``dot`` directly; both need Graphviz's ``dot`` program.
    """
    fmt = (format or os.path.splitext(path)[1].lstrip(".")).lower()
    if fmt not in _FORMATS:
        raise ValueError(f"Cannot render to {path!r}: the format must be one of "
                         f"{', '.join(_FORMATS)} (from format= or the file extension)")
    if not graphviz_available():
        raise GraphvizNotFoundError(
            "Rendering needs Graphviz's 'dot' program, which is not on the PATH. Install it "
            "(Debian/Ubuntu: apt-get install graphviz; macOS: brew install graphviz; conda: "
            "conda install graphviz), or keep the DOT text and paste it into any Graphviz "
            "viewer.")
    data = _run_dot(dot_source, fmt)
    with open(path, "wb") as f:
        f.write(data)
    return path


def _run_dot(dot_source: str, fmt: str) -> bytes:
    try:
        import graphviz
    except ImportError:
        result = subprocess.run(["dot", f"-T{fmt}"], input=dot_source.encode(),
                                capture_output=True, timeout=300, check=False)
        if result.returncode != 0:
            raise RuntimeError(
                f"Graphviz 'dot' failed: {result.stderr.decode(errors='replace')}") from None
        return result.stdout
    return graphviz.Source(dot_source).pipe(format=fmt)


# ------------------------------------------------------------------ ops and kinds
def _collect_ops(graph_or_ops) -> list[Operation]:
    if graph_or_ops is None:
        graph_or_ops = get_default_graph()
    if isinstance(graph_or_ops, Graph):
        return graph_or_ops.get_operations()
    ops: dict[Operation, None] = {}
    for item in graph_or_ops:
        op = item.op if isinstance(item, Tensor) else item
        if not isinstance(op, Operation):
            raise TypeError(f"to_dot takes a Graph or a list of ops and tensors, got "
                            f"{type(item).__name__}: {item!r}")
        ops[op] = None
    return sorted(ops, key=lambda op: op.id)


def _gradient_scopes(ops: list[Operation]) -> set[str]:
    """The scopes of the gradients calls that made some of ``ops`` (``gradients/``...)."""
    scopes = set()
    for op in ops:
        origin = op.original_op
        if origin is None:
            continue
        marker = f"{origin.name}_grad/"
        at = op.name.rfind(marker)
        if at > 0:
            scopes.add(op.name[:at].rstrip("/"))
    return scopes


def _kind(op: Operation, gradient_scopes: set[str]) -> dict:
    if op.original_op is not None or any(op.name.startswith(s + "/") for s in gradient_scopes):
        return _GRADIENT
    if op.type.startswith(_UPDATE_PREFIXES):
        return _UPDATE
    return _FORWARD


def _scope_of(op: Operation, used_scopes: set) -> str:
    """The cluster of ``op``: its name scope; a variable joins its own ``name/`` scope
    when other drawn ops (``name/read``...) live there."""
    if op.type == "VariableV2" and op.name in used_scopes:
        return op.name
    return op.name.rpartition("/")[0]


def _node(op: Operation, kind: dict) -> str:
    short = op.name.rpartition("/")[2]
    label = short if short == op.type else f"{short}\n{op.type}"
    attrs = {"label": label, "tooltip": f"{op.name} ({op.type})", **kind}
    shape = _SOURCE_SHAPES.get(op.type)
    if shape:
        attrs["shape"] = shape
        attrs["style"] = "filled"
    return f"{_node_id(op)} [{_attrs(attrs)}];"


def _edges(op: Operation, included: set, show_shapes: bool, gradient_scopes: set) -> list[str]:
    lines = []
    gradient = _kind(op, gradient_scopes) is _GRADIENT
    for t in op.inputs:
        if t.op not in included:
            continue
        attrs = {"tooltip": f"{t.name} {t.dtype.name} {t.shape}"}
        if show_shapes:
            attrs["label"] = _shape_text(t)
        if gradient:
            attrs["color"] = _GRADIENT["color"]
        lines.append(f"  {_node_id(t.op)} -> {_node_id(op)} [{_attrs(attrs)}];")
    for c in op.control_inputs:
        if c in included:
            lines.append(f'  {_node_id(c)} -> {_node_id(op)} [style=dashed, color="#999999", '
                         'arrowhead=odot];')
    return lines


def _shape_text(t: Tensor) -> str:
    dims = t.shape.as_list() if t.shape.ndims is not None else None
    if dims is None:
        return "?"
    return "scalar" if not dims else "x".join("?" if d is None else str(d) for d in dims)


# -------------------------------------------------------------------- clusters
class _ScopeTree:
    """Name scopes as nested DOT clusters, each holding the nodes of its ops."""

    def __init__(self):
        self._nodes: dict[str, list[str]] = {"": []}
        self._gradient: set[str] = set()

    def add(self, scope: str, node: str, gradient: bool) -> None:
        self._nodes.setdefault(scope, []).append(node)
        parts = scope.split("/") if scope else []
        for i in range(1, len(parts) + 1):
            prefix = "/".join(parts[:i])
            self._nodes.setdefault(prefix, [])
            if gradient:
                self._gradient.add(prefix)

    def render(self) -> list[str]:
        """Opens and closes clusters in sorted scope order (children follow parents)."""
        lines = [f"  {node}" for node in self._nodes[""]]
        open_scopes: list[str] = []
        scopes = sorted((s for s in self._nodes if s), key=lambda s: s.split("/"))
        for index, scope in enumerate(scopes):
            while open_scopes and not scope.startswith(open_scopes[-1] + "/"):
                open_scopes.pop()
                lines.append("  " * (len(open_scopes) + 1) + "}")
            indent = "  " * (len(open_scopes) + 1)
            style = _GRADIENT if scope in self._gradient else _FORWARD
            lines.append(f"{indent}subgraph cluster_{index} {{")
            lines.append(f'{indent}  label={_quote(scope.rpartition("/")[2] + "/")}; '
                         f'style="rounded,dashed"; color={_quote(style["color"])}; '
                         f'fontcolor={_quote(style["color"])}; fontsize=9;')
            lines += [f"{indent}  {node}" for node in self._nodes[scope]]
            open_scopes.append(scope)
        while open_scopes:
            open_scopes.pop()
            lines.append("  " * (len(open_scopes) + 1) + "}")
        return lines


def _node_id(op: Operation) -> str:
    return f"op{op.id}"


def _attrs(attrs: dict) -> str:
    return ", ".join(f"{key}={_quote(value)}" for key, value in attrs.items())


def _quote(value) -> str:
    text = str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{text}"'
