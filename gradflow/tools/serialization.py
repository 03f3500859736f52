"""Saving graphs to JSON + NPZ and loading them back (format: docs/serialization.md).

``save_graph(graph, "model")`` writes ``model.json`` (ops, attrs, functions,
collections) and ``model.npz`` (every NumPy array attr, e.g. constants).
``load_graph("model")`` recreates each op through ``Graph.create_op`` with its type,
inputs, attrs and name, so the new graph runs and differentiates like the old one.
Loading never executes code: JSON and ``allow_pickle=False`` arrays only, every
reference and attr kind checked, and sizes bounded by :class:`LoadLimits`; a bad file
raises ValueError naming the file and the problem. At load, each op's attrs are checked
against its kernel's keyword parameters (no unknown attr, none missing, each of the
kind its default has, integers within int64), calls must pass their function's
number of arguments, and control dependencies must not form a cycle; only regular
files are read.
"""
from __future__ import annotations

import base64
import dataclasses
import functools
import inspect
import json
import math
import os
from typing import Any, Optional

import numpy as np

from gradflow.framework import dtypes
from gradflow.framework.function import FuncGraph, Function
from gradflow.framework.graph import Graph, GraphKeys, Operation, Tensor, gc_paused
from gradflow.framework.registry import get_op_def
from gradflow.framework.tensor_shape import TensorShape
from gradflow.ops.state import Variable
from gradflow.tools.npz_io import NpzReader, atomic_write_text, open_regular, write_npz

__all__ = ["save_graph", "load_graph", "LoadLimits", "FORMAT", "VERSION"]

FORMAT = "gradflow.graph"
VERSION = 1


@dataclasses.dataclass(frozen=True)
class LoadLimits:
    """Upper bounds on what one file may make ``load_graph`` read or allocate."""

    max_json_bytes: int = 256 << 20
    max_ops: int = 1_000_000
    max_graphs: int = 10_000
    max_array_bytes: int = 1 << 30
    max_total_array_bytes: int = 4 << 30
    max_attr_depth: int = 32
    max_functions: int = 100_000
    max_name_chars: int = 4096
    max_name_depth: int = 256


def _paths(path: str) -> tuple[str, str]:
    stem = path[:-5] if path.endswith(".json") else path
    return stem + ".json", stem + ".npz"


# ======================================================================== saving
def save_graph(graph: Graph, path: str) -> tuple[str, str]:
    """Writes ``graph`` to ``<path>.json`` and ``<path>.npz``; returns both paths.

    Raises ValueError for what the format cannot hold: an attr value of an unknown
    kind, or a function with a Python gradient (``python_grad_func``/``grad_func``).
    """
    if not isinstance(graph, Graph):
        raise TypeError(f"save_graph needs a gf.Graph, got {type(graph).__name__}")
    json_path, npz_path = _paths(path)
    encoder = _Encoder(graph)
    document = encoder.document()
    write_npz(npz_path, encoder.arrays, compress=True)
    atomic_write_text(json_path, json.dumps(document, indent=1, allow_nan=False) + "\n")
    return json_path, npz_path


class _Encoder:
    """Turns a graph, its function graphs and their attrs into JSON + named arrays."""

    def __init__(self, graph: Graph):
        self.main = graph
        self.arrays: dict[str, np.ndarray] = {}
        self.functions: list[Function] = []
        self.function_index: dict[Function, int] = {}

    def document(self) -> dict:
        graphs = _graphs_in_build_order(self.main)
        graph_index = {g: i for i, g in enumerate(graphs)}
        encoded = [self._graph(g, graph_index) for g in graphs]
        return {
            "format": FORMAT, "version": VERSION, "graphs": encoded,
            "functions": [self._function(f, graph_index) for f in self.functions],
            "collections": _collections(self.main),
        }

    def _graph(self, graph: Graph, graph_index: dict) -> dict:
        entry: dict[str, Any] = {"ops": [self._op(op) for op in graph.get_operations()]}
        if isinstance(graph, FuncGraph):
            entry.update(
                name=graph.name, outer=graph_index[graph.outer_graph],
                inputs=[t.name for t in graph.inputs], outputs=[t.name for t in graph.outputs],
                captures=[[outer.name, inner.name] for inner, outer
                          in graph.capture_sources.items()])
        return entry

    def _op(self, op: Operation) -> dict:
        origin = op.original_op
        return {
            "name": op.name, "type": op.type, "inputs": [t.name for t in op.inputs],
            "control_inputs": [c.name for c in op.control_inputs], "device": op.device,
            "original_op": origin.name if origin is not None and origin.graph is op.graph
            else None,
            "attrs": {key: self._value(value, f"attr '{key}' of op '{op.name}' ({op.type})")
                      for key, value in op.attrs.items()},
        }

    def _function(self, function: Function, graph_index: dict) -> dict:
        return {"name": function.name, "graph": graph_index[function.graph],
                "inputs": [t.name for t in function.inputs],
                "outputs": [t.name for t in function.outputs]}

    def _value(self, value, where: str) -> dict:
        """One attr value as a tagged JSON object (arrays go to the NPZ)."""
        if value is None:
            return {"kind": "none"}
        if isinstance(value, bool):
            return {"kind": "bool", "value": value}
        if isinstance(value, int):
            return {"kind": "int", "value": value}
        if isinstance(value, float):
            return {"kind": "float", "value": value if math.isfinite(value) else repr(value)}
        if isinstance(value, str):
            return {"kind": "str", "value": value}
        if isinstance(value, bytes):
            return {"kind": "bytes", "value": base64.b64encode(value).decode("ascii")}
        if isinstance(value, dtypes.DType):
            return {"kind": "dtype", "value": value.name}
        if isinstance(value, TensorShape):
            return {"kind": "shape", "value": None if value.ndims is None else value.as_list()}
        if isinstance(value, (list, tuple)):
            return {"kind": type(value).__name__,
                    "value": [self._value(v, where) for v in value]}
        if isinstance(value, (np.ndarray, np.generic)):
            return self._array(np.asarray(value), isinstance(value, np.generic), where)
        if isinstance(value, Function):
            return {"kind": "function", "value": self._function_ref(value, where)}
        raise ValueError(f"Cannot serialise {where}: values of type {type(value).__name__} "
                         "have no JSON/NPZ encoding")

    def _array(self, array: np.ndarray, scalar: bool, where: str) -> dict:
        if array.dtype.hasobject:
            return {"kind": "string_array", "shape": list(array.shape),
                    "value": [self._value(item, where) for item in array.reshape(-1)]}
        key = f"a{len(self.arrays)}"
        self.arrays[key] = array
        return {"kind": "scalar" if scalar else "array", "key": key}

    def _function_ref(self, function: Function, where: str) -> int:
        if function.python_grad_func is not None or function.grad_func is not None:
            raise ValueError(f"Cannot serialise {where}: function '{function.name}' has a "
                             "Python gradient (python_grad_func/grad_func), which a file "
                             "cannot hold")
        if function not in self.function_index:
            self.function_index[function] = len(self.functions)
            self.functions.append(function)
        return self.function_index[function]


def _graphs_in_build_order(main: Graph) -> list[Graph]:
    """Every graph reachable through function attrs, each after the graphs it calls."""
    order: list[Graph] = []
    state: dict[Graph, str] = {}
    stack: list[tuple[Graph, bool]] = [(main, False)]
    while stack:
        graph, expanded = stack.pop()
        if expanded:
            state[graph] = "done"
            order.append(graph)
            continue
        if graph in state:
            continue
        state[graph] = "open"
        stack.append((graph, True))
        for called in _called_graphs(graph):
            if state.get(called) == "open":
                raise ValueError(f"Graph functions call each other in a cycle through "
                                 f"'{getattr(called, 'name', 'the main graph')}'")
            if called not in state:
                stack.append((called, False))
    return order


def _called_graphs(graph: Graph) -> list[Graph]:
    found = []
    for op in graph.get_operations():
        stack = list(op.attrs.values())
        while stack:
            value = stack.pop()
            if isinstance(value, Function):
                found.append(value.graph)
            elif isinstance(value, (list, tuple)):
                stack.extend(value)
    return found


def _collections(graph: Graph) -> dict:
    """Collections of tensors, ops and Variables, by name (other items are skipped)."""
    result = {}
    for key in graph.get_all_collection_keys():
        items = [_collection_item(v) for v in graph.get_collection(key)]
        items = [item for item in items if item is not None]
        if items:
            result[key] = items
    return result


def _collection_item(value) -> Optional[dict]:
    if isinstance(value, Tensor):
        return {"tensor": value.name}
    if isinstance(value, Operation):
        return {"op": value.name}
    if isinstance(value, Variable):
        return {"variable": value.op.name}
    return None


# ======================================================================== loading
def load_graph(path: str, limits: Optional[LoadLimits] = None) -> Graph:
    """Reads a graph written by :func:`save_graph` into a new Graph.

    ``path`` is the stem or the ``.json`` file. Raises ValueError naming the problem for
    a malformed or oversized file (unknown op type, bad input reference, wrong attr
    kind, ...); nothing in the file is ever executed.
    """
    limits = limits or LoadLimits()
    json_path, npz_path = _paths(path)
    document = _read_json(json_path, limits)
    arrays = NpzReader(npz_path, limits.max_array_bytes) if os.path.lexists(npz_path) else None
    try:
        with gc_paused():  # thousands of new objects, none garbage: no full collections
            return _Decoder(document, arrays, limits, json_path).build()
    except ValueError as err:
        raise ValueError(f"{json_path}: {err}") from None
    finally:
        if arrays is not None:
            arrays.close()


def _read_json(path: str, limits: LoadLimits) -> dict:
    with open_regular(path, "graph file") as f:
        size = os.fstat(f.fileno()).st_size
        if size <= limits.max_json_bytes:
            data = f.read(size + 1)  # a file grown since: caught below, never read whole
    if size > limits.max_json_bytes or len(data) > limits.max_json_bytes:
        raise ValueError(f"{path} is over the limit of {limits.max_json_bytes} bytes")
    try:
        document = json.loads(data.decode("utf-8"), parse_constant=_reject_constant)
    except (ValueError, RecursionError) as err:  # bad JSON, bad UTF-8, 4,300+ digit ints
        raise ValueError(f"{path} is not valid JSON: {err}") from None
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise ValueError(f"{path} is not a gradflow graph file (format {FORMAT!r} expected)")
    if document.get("version") != VERSION:
        raise ValueError(f"{path} has format version {document.get('version')!r}; this "
                         f"gradflow reads version {VERSION}")
    return document


def _reject_constant(name: str):
    raise ValueError(f"non-standard JSON constant {name}")


def _expect(value, kind: type, what: str):
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ValueError(f"{what} must be a {kind.__name__}, got {type(value).__name__}")
    return value


class _Decoder:
    """Rebuilds graphs, functions and collections from a checked JSON document."""

    def __init__(self, document: dict, arrays: Optional[NpzReader], limits: LoadLimits,
                 source: str):
        self.doc = document
        self.arrays = arrays
        self.limits = limits
        self.source = source
        self.array_bytes = 0
        self.functions: list[Optional[Function]] = []
        self.graphs: list[Graph] = []

    def build(self) -> Graph:
        graph_entries = _expect(self.doc.get("graphs"), list, "'graphs'")
        function_entries = _expect(self.doc.get("functions", []), list, "'functions'")
        if not graph_entries or len(graph_entries) > self.limits.max_graphs:
            raise ValueError(f"'graphs' must list 1 to {self.limits.max_graphs} graphs")
        total_ops = sum(len(_expect(_expect(g, dict, "a graph").get("ops"), list, "'ops'"))
                        for g in graph_entries)
        if total_ops > self.limits.max_ops:
            raise ValueError(f"the file holds {total_ops} ops, over the limit of "
                             f"{self.limits.max_ops}")
        if len(function_entries) > self.limits.max_functions:
            raise ValueError(f"the file holds {len(function_entries)} functions, over the "
                             f"limit of {self.limits.max_functions}")
        self.graphs = self._make_graphs(graph_entries)
        self.functions = [None] * len(function_entries)
        functions_of: dict = {}  # graph index -> its functions' indices (linear, not a scan)
        for index, entry in enumerate(function_entries):
            owner = _expect(entry, dict, f"function {index}").get("graph")
            if isinstance(owner, int):  # others are never built: their uses are refused
                functions_of.setdefault(owner, []).append(index)
        for index, (graph, entry) in enumerate(zip(self.graphs, graph_entries)):
            self._build_ops(graph, entry, index)
            self._build_functions(index, function_entries, functions_of.get(index, ()))
        for graph, entry in zip(self.graphs, graph_entries):
            if isinstance(graph, FuncGraph):
                self._link_function_graph(graph, entry)
        main = self.graphs[-1]
        self._restore_collections(main)
        return main

    def _make_graphs(self, entries: list) -> list[Graph]:
        """Graph objects, main graph last; a function graph's outer graph comes later."""
        graphs: list[Optional[Graph]] = [None] * len(entries)
        graphs[-1] = Graph()
        for index in range(len(entries) - 2, -1, -1):
            entry = entries[index]
            outer = _expect(entry.get("outer"), int, f"graph {index} 'outer'")
            if not index < outer < len(entries):
                raise ValueError(f"graph {index}: outer graph {outer} must come after it")
            name = self._checked_name(_expect(entry.get("name"), str, f"graph {index} 'name'"),
                                      f"graph {index}")
            graphs[index] = FuncGraph(name, graphs[outer])
        return graphs

    def _build_ops(self, graph: Graph, entry: dict, index: int) -> None:
        ops = entry["ops"]
        with graph.as_default():
            for i, op_entry in enumerate(ops):
                self._build_op(graph, _expect(op_entry, dict, f"graph {index} op {i}"))
            for op_entry in ops:
                op = graph.get_operation_by_name(op_entry["name"])
                controls = [self._op_ref(graph, name, op.name) for name in
                            _expect(op_entry.get("control_inputs", []), list,
                                    f"op '{op.name}' 'control_inputs'")]
                if op in controls:
                    raise ValueError(f"op '{op.name}' has a control dependency on itself")
                op.add_control_inputs(controls)
        _check_acyclic(graph)
        _mark_scopes_used(graph)

    def _checked_name(self, name: str, what: str) -> str:
        """``name`` if it is of a sane length and depth: checked before any work on it."""
        if len(name) > self.limits.max_name_chars:
            raise ValueError(f"{what}: a name of {len(name)} characters, over the limit of "
                             f"{self.limits.max_name_chars}")
        depth = name.count("/")
        if depth > self.limits.max_name_depth:
            raise ValueError(f"{what}: a name {depth} scopes deep, over the limit of "
                             f"{self.limits.max_name_depth}")
        return name

    def _build_op(self, graph: Graph, entry: dict) -> Operation:
        name = self._checked_name(_expect(entry.get("name"), str, "an op's 'name'"),
                                  "an op")
        op_type = _expect(entry.get("type"), str, f"op '{name}' 'type'")
        try:
            op_def = get_op_def(op_type)
        except ValueError:
            raise ValueError(f"op '{name}': unknown op type '{op_type}' (not registered in "
                             "this gradflow)") from None
        inputs = [self._tensor_ref(graph, ref, name)
                  for ref in _expect(entry.get("inputs", []), list, f"op '{name}' 'inputs'")]
        attrs = {_expect(key, str, f"op '{name}' attr name"):
                 self._value(value, f"op '{name}' attr '{key}'", 0)
                 for key, value in _expect(entry.get("attrs", {}), dict,
                                           f"op '{name}' 'attrs'").items()}
        _check_attrs(op_def, name, attrs)
        _check_call_arity(op_type, name, len(inputs), attrs)
        if op_type == "Const":
            _check_const(name, attrs)
        origin = entry.get("original_op")
        origin_op = None if origin is None else self._op_ref(graph, origin, name)
        device = _expect(entry.get("device", ""), str, f"op '{name}' 'device'")
        try:
            with graph.device(device or None), graph.gradient_origin(origin_op):
                op = graph.create_op(op_type, inputs, attrs, name=name)
        except (TypeError, ValueError, KeyError, IndexError, AttributeError) as err:
            raise ValueError(f"op '{name}' ({op_type}) cannot be created from the file: "
                             f"{err}") from None
        if op.name != name:
            raise ValueError(f"op '{name}' repeats the name of an earlier op")
        return op

    def _tensor_ref(self, graph: Graph, ref, user: str) -> Tensor:
        ref = _expect(ref, str, f"an input of op '{user}'")
        op_name, _, index = ref.rpartition(":")
        if not index.isdigit() or not _has_op(graph, op_name):
            raise ValueError(f"op '{user}': bad input reference {ref!r} (no op of that name "
                             "defined before it)")
        op = graph.get_operation_by_name(op_name)
        if int(index) >= len(op.outputs):
            raise ValueError(f"op '{user}': bad input reference {ref!r} ('{op_name}' has "
                             f"{len(op.outputs)} outputs)")
        return op.outputs[int(index)]

    def _op_ref(self, graph: Graph, name, user: str) -> Operation:
        name = _expect(name, str, f"an op reference of '{user}'")
        if not _has_op(graph, name):
            raise ValueError(f"'{user}': bad op reference {name!r} (no op of that name)")
        return graph.get_operation_by_name(name)

    def _build_functions(self, graph_index: int, entries: list, indices) -> None:
        graph = self.graphs[graph_index]
        for index in indices:
            entry = entries[index]
            where = f"function {index}"
            self.functions[index] = Function(
                graph, [self._tensor_ref(graph, r, where) for r in
                        _expect(entry.get("inputs"), list, f"{where} 'inputs'")],
                [self._tensor_ref(graph, r, where) for r in
                 _expect(entry.get("outputs"), list, f"{where} 'outputs'")],
                name=_expect(entry.get("name"), str, f"{where} 'name'"))

    def _link_function_graph(self, graph: FuncGraph, entry: dict) -> None:
        where = f"function graph '{graph.name}'"
        graph.inputs = [self._tensor_ref(graph, r, where)
                        for r in _expect(entry.get("inputs", []), list, f"{where} 'inputs'")]
        graph.outputs = [self._tensor_ref(graph, r, where)
                         for r in _expect(entry.get("outputs", []), list, f"{where} 'outputs'")]
        for pair in _expect(entry.get("captures", []), list, f"{where} 'captures'"):
            if not isinstance(pair, list) or len(pair) != 2:
                raise ValueError(f"{where}: a capture must be [outer tensor, placeholder]")
            outer = self._tensor_ref(graph.outer_graph, pair[0], where)
            inner = self._tensor_ref(graph, pair[1], where)
            graph.captures[outer] = inner
            graph.capture_sources[inner] = outer

    def _restore_collections(self, graph: Graph) -> None:
        collections = _expect(self.doc.get("collections", {}), dict, "'collections'")
        trainable = {item.get("variable") for item in
                     collections.get(GraphKeys.TRAINABLE_VARIABLES, [])
                     if isinstance(item, dict) and isinstance(item.get("variable"), str)}
        variables: dict = {}
        for key, items in collections.items():
            for item in _expect(items, list, f"collection {key!r}"):
                item = _expect(item, dict, f"an item of collection {key!r}")
                if "tensor" in item:
                    graph.add_to_collection(key, self._tensor_ref(graph, item["tensor"], key))
                elif "variable" in item:
                    name = _expect(item["variable"], str, f"a variable of collection {key!r}")
                    if name not in variables:
                        variables[name] = Variable.from_ops(self._op_ref(graph, name, key),
                                                            trainable=name in trainable)
                    graph.add_to_collection(key, variables[name])
                else:
                    graph.add_to_collection(key, self._op_ref(graph, item.get("op"), key))

    # ------------------------------------------------------------- attr values
    def _value(self, encoded, where: str, depth: int):
        if depth > self.limits.max_attr_depth:
            raise ValueError(f"{where}: attr value nested deeper than "
                             f"{self.limits.max_attr_depth} levels")
        if not isinstance(encoded, dict) or "kind" not in encoded:
            raise ValueError(f"{where}: an attr value must be an object with a 'kind'")
        kind = encoded["kind"]
        if not isinstance(kind, str):
            raise ValueError(f"{where}: unknown attr kind {kind!r}")
        decode = _SIMPLE_KINDS.get(kind)
        if decode is not None:
            try:
                return decode(encoded.get("value"))
            except (TypeError, ValueError, KeyError) as err:
                raise ValueError(f"{where}: bad {kind} value {encoded.get('value')!r} "
                                 f"({err})") from None
        if kind in ("list", "tuple"):
            items = [self._value(v, where, depth + 1)
                     for v in _expect(encoded.get("value"), list, f"{where} value")]
            return items if kind == "list" else tuple(items)
        if kind in ("array", "scalar"):
            return self._array(encoded.get("key"), kind == "scalar", where)
        if kind == "string_array":
            return self._string_array(encoded, where, depth)
        if kind == "function":
            return self._function(encoded.get("value"), where)
        raise ValueError(f"{where}: unknown attr kind {kind!r}")

    def _array(self, key, scalar: bool, where: str):
        if self.arrays is None:
            raise ValueError(f"{where}: the array file beside {self.source} is missing")
        if not isinstance(key, str) or key not in self.arrays.keys:
            raise ValueError(f"{where}: array {key!r} is not in the array file")
        array = self.arrays.read(key)
        self.array_bytes += array.nbytes
        if self.array_bytes > self.limits.max_total_array_bytes:
            raise ValueError(f"the file's arrays exceed {self.limits.max_total_array_bytes} "
                             "bytes in total")
        array.setflags(write=False)
        return array[()] if scalar else array

    def _string_array(self, encoded: dict, where: str, depth: int) -> np.ndarray:
        shape = _expect(encoded.get("shape"), list, f"{where} shape")
        items = [self._value(v, where, depth + 1)
                 for v in _expect(encoded.get("value"), list, f"{where} value")]
        if any(not isinstance(i, (str, bytes)) for i in items) or \
                not all(isinstance(d, int) and d >= 0 for d in shape) or \
                int(np.prod(shape, dtype=np.int64)) != len(items):
            raise ValueError(f"{where}: a string array needs str/bytes items matching its shape")
        array = np.empty(len(items), dtype=object)
        array[:] = items
        array = array.reshape(shape)
        array.setflags(write=False)
        return array

    def _function(self, index, where: str) -> Function:
        if not isinstance(index, int) or not 0 <= index < len(self.functions) or \
                self.functions[index] is None:
            raise ValueError(f"{where}: function {index!r} is not defined before its use")
        return self.functions[index]


def _check_const(name: str, attrs: dict) -> None:
    """A constant's value must have the dtype it claims (kernels return it as is)."""
    value, dtype = attrs.get("value"), attrs.get("dtype")
    if not isinstance(value, np.ndarray) or not isinstance(dtype, dtypes.DType) or \
            value.dtype != np.dtype(dtype.as_numpy_dtype):
        raise ValueError(f"op '{name}' (Const): its value must be an array of its dtype "
                         f"attr, got {getattr(value, 'dtype', type(value).__name__)} for "
                         f"{getattr(dtype, 'name', dtype)}")


def _decode_float(value) -> float:
    if isinstance(value, str) and value in ("nan", "inf", "-inf"):
        return float(value)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    raise TypeError("not a number")


_INT64 = 1 << 63


def _decode_int(value) -> int:
    value = _expect(value, int, "an int attr")
    if not -_INT64 <= value < _INT64:
        raise ValueError(f"an int attr of {value.bit_length()} bits is out of int64 range")
    return value


def _decode_shape(value) -> TensorShape:
    if value is None:
        return TensorShape(None)
    dims = _expect(value, list, "a shape")
    if not all(d is None or (isinstance(d, int) and not isinstance(d, bool) and 0 <= d < _INT64)
               for d in dims):
        raise ValueError("dimensions must be non-negative int64 values or null")
    return TensorShape(dims)


_SIMPLE_KINDS = {
    "none": lambda value: None,
    "bool": lambda value: _expect(value, bool, "a bool attr"),
    "int": _decode_int,
    "float": _decode_float,
    "str": lambda value: _expect(value, str, "a str attr"),
    "bytes": lambda value: base64.b64decode(_expect(value, str, "a bytes attr"), validate=True),
    "dtype": lambda value: dtypes.as_dtype(_expect(value, str, "a dtype attr")),
    "shape": _decode_shape,
}


def _has_op(graph: Graph, name: str) -> bool:
    try:
        graph.get_operation_by_name(name)
    except (KeyError, ValueError):
        return False
    return True


def _mark_scopes_used(graph: Graph) -> None:
    """Marks every name scope of the loaded ops as taken, as building them would have.

    Scopes are walked from the deepest out and each is looked at once: the scopes an
    earlier op marked stop the walk (names are bounded by ``LoadLimits``)."""
    marked: set = set()
    for op in graph.get_operations():
        scopes = []
        end = op.name.rfind("/")
        while end > 0 and op.name[:end] not in marked:
            scopes.append(op.name[:end])
            end = op.name.rfind("/", 0, end)
        for scope in reversed(scopes):
            marked.add(scope)
            if graph.unique_name(scope, mark_as_used=False) == scope:
                graph.unique_name(scope)


def _check_acyclic(graph: Graph) -> None:
    """Data and control edges must form no cycle (Kahn's algorithm: linear)."""
    ops = graph.get_operations()
    waiting = {op: len(op.inputs) + len(op.control_inputs) for op in ops}
    ready = [op for op, count in waiting.items() if count == 0]
    done = 0
    while ready:
        op = ready.pop()
        done += 1
        for successor in [c for t in op.outputs for c in t.consumers()] + op.control_outputs:
            waiting[successor] -= 1
            if waiting[successor] == 0:
                ready.append(successor)
    if done != len(ops):
        stuck = next(op for op in ops if waiting[op])
        raise ValueError(f"control dependencies form a cycle through op '{stuck.name}'")


@functools.lru_cache(maxsize=None)
def _attr_schema(op_type: str) -> Optional[tuple[dict, frozenset]]:
    """The attrs an op type's kernel takes (name -> default, ``_REQUIRED`` if none) and
    those it cannot run without (keyword-only, no default); None when the kernel
    accepts any keyword, so that its attrs cannot be told."""
    kernel = get_op_def(op_type).kernel
    if kernel is None:
        return None
    try:
        parameters = inspect.signature(kernel).parameters.values()
    except (TypeError, ValueError):
        return None
    if any(p.kind is p.VAR_KEYWORD for p in parameters):
        return None
    known = {p.name: _REQUIRED if p.default is p.empty else p.default for p in parameters
             if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)}
    required = frozenset(p.name for p in parameters
                         if p.kind is p.KEYWORD_ONLY and p.default is p.empty)
    return known, required


_REQUIRED = object()
# An attr whose kernel default is of the first kind must be of one of the second kinds.
_ATTR_KINDS = ((bool, (bool,)), (int, (int,)), (float, (float, int)), (str, (str,)))
# Kinds of attrs that kernels take without a default, by TF's conventional names.
_NAMED_KINDS = {
    **dict.fromkeys(("keep_dims", "sparse_gradient", "adjoint", "with_counts", "exclusive",
                     "reverse", "full_matrices", "transpose_a", "transpose_b", "adj_x",
                     "adj_y", "lower", "compute_uv", "compute_v", "record_history",
                     "dynamic_size", "identical_element_shapes", "descending"),
                    ("bool", (bool,))),
    **dict.fromkeys(("seed", "seed2", "stream", "num_split", "num", "batch_dims",
                     "num_loop_vars", "num_inputs"), ("int", (int,))),
    **dict.fromkeys(("message", "data_format", "shared_name", "equation",
                     "tensor_array_name"), ("str", (str,))),
    **dict.fromkeys(("dtype", "out_type", "out_idx", "output_type", "SrcT", "DstT"),
                    ("dtype", (dtypes.DType,))),
    **dict.fromkeys(("f", "then_branch", "else_branch", "cond", "body"),
                    ("function", (Function,))),
}


def _expected_kind(key: str, default) -> Optional[tuple[str, tuple]]:
    """(name, accepted types) of attr ``key`` from its kernel default, else its name."""
    for default_kind, kinds in _ATTR_KINDS:
        if isinstance(default, default_kind):
            return default_kind.__name__, kinds
    return _NAMED_KINDS.get(key) if default is _REQUIRED or default is None else None


def _check_attrs(op_def, name: str, attrs: dict) -> None:
    """Every attr known to the op's kernel and of its default's kind; none missing."""
    schema = _attr_schema(op_def.type)
    if schema is None:
        return
    known, required = schema
    for key, value in attrs.items():
        if key.startswith("_"):
            continue  # graph-level attrs (colocation, compile scopes, overrides)
        if key not in known:
            raise ValueError(f"op '{name}' ({op_def.type}): unknown attr '{key}' (its "
                             f"kernel takes {sorted(k for k in known if k != 'ctx')})")
        expected = _expected_kind(key, known[key])
        if expected is not None and (not isinstance(value, expected[1]) or (
                isinstance(value, bool) and bool not in expected[1])):
            raise ValueError(f"op '{name}' ({op_def.type}): attr '{key}' must be a "
                             f"{expected[0]}, got {type(value).__name__}")
    missing = sorted(required - attrs.keys())
    if missing:
        raise ValueError(f"op '{name}' ({op_def.type}): attr '{missing[0]}' is missing")


def _check_call_arity(op_type: str, name: str, num_inputs: int, attrs: dict) -> None:
    """Ops running graph functions must pass each function its number of arguments."""
    if op_type == "PartitionedCall":
        calls = [("f", attrs.get("f"), num_inputs)]
    elif op_type == "If":
        calls = [(k, attrs.get(k), num_inputs - 1) for k in ("then_branch", "else_branch")]
    elif op_type == "While":
        calls = [(k, attrs.get(k), num_inputs) for k in ("cond", "body")]
        body, loop_vars = attrs.get("body"), attrs.get("num_loop_vars")
        if isinstance(body, Function) and len(body.outputs) != loop_vars:
            raise ValueError(f"op '{name}' (While): body returns {len(body.outputs)} values "
                             f"for {loop_vars} loop variables")
    else:
        return
    for key, function, passed in calls:
        if isinstance(function, Function) and len(function.inputs) != passed:
            raise ValueError(f"op '{name}' ({op_type}): passes {passed} arguments to "
                             f"function '{function.name}' (attr '{key}'), which takes "
                             f"{len(function.inputs)}")
