"""``import_graph_def``: a TensorFlow ``GraphDef`` (TF's own or gradflow's) as ops of a
gradflow graph.

Each node becomes an op of the same type, name (under the ``name`` prefix, ``import`` by
default), device and attrs, with TF's attr defaults filled where the node leaves them
out, and the gradflow defaults an op type needs beyond TF's. Since the types are TF's,
the ops run with gradflow's kernels and differentiate with its gradient rules. A TF
``Identity`` reading a ``VariableV2`` becomes gradflow's variable read.

Before anything is added every node is checked: an op type gradflow does not know, a
missing input, a cycle (TF1 ``while`` loops as raw frames) or a function library that
TF wrote raise ValueError naming the node, and the graph is left as it was
(``Graph.atomic``). A library gradflow wrote (``graph_def.function_library``: how a
cluster stage carries its cond, while_loop and Defun bodies) is rebuilt as functions.
"""
from __future__ import annotations

import contextlib
import inspect
from typing import Optional

from google.protobuf import message
from tensorboard.compat.proto import attr_value_pb2, graph_pb2

from gradflow.framework.function import FuncGraph, Function
from gradflow.framework.graph import Graph, Operation, Tensor, get_default_graph
from gradflow.framework.registry import OpDef, get_op_def, registered_op_types
from gradflow.framework.tensor_proto import dtype_from_enum
from gradflow.io.graph_def import GRADFLOW_BODY_ATTR, python_value
from gradflow.io.tf_op_defs import TF_OP_DEFS

__all__ = ["import_graph_def", "importable_op_types"]

# Attrs a gradflow kernel reads that TF's op of that type does not declare.
_GRADFLOW_DEFAULTS = {"Softmax": {"axis": -1}, "LogSoftmax": {"axis": -1},
                      "LinSpace": {"axis": 0}, "Unique": {"with_counts": False},
                      "UniqueWithCounts": {"with_counts": True}}
# TF op types gradflow builds from several of its own ops: one ``Shape`` per input of
# ``ShapeN`` (TF's gradients of Conv2D use it).
_EXPANDED = {"ShapeN": "Shape"}
# The AttrValue field holding each kind of TF attr.
_ATTR_FIELDS = {"type": "type", "int": "i", "string": "s", "bool": "b", "float": "f",
                "shape": "shape", "tensor": "tensor", "func": "func"}
# Attrs TF writes that describe the GraphDef, not the op.
_DROPPED_ATTRS = frozenset({"_output_shapes"})


def _kernel_attrs(op_def: OpDef, num_inputs: int) -> tuple[Optional[set], set]:
    """The attr names ``op_def``'s kernel takes (None: any) and those it requires.

    The executor passes an op's attrs to its kernel as keywords, so an imported op keeps
    only the attrs its kernel names; TF's others (``T``, ``use_cudnn_on_gpu``...) are
    derived again on export.
    """
    if op_def.kernel is None:
        return None, set()
    try:
        params = list(inspect.signature(op_def.kernel).parameters.values())
    except (TypeError, ValueError):
        return None, set()
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return None, set()
    skip = num_inputs + (1 if op_def.needs_context else 0)
    named = [p for p in params if p.kind is not p.VAR_POSITIONAL]
    positional = [p for p in named if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    attrs = [p for p in named if p not in positional[:skip]]
    return ({p.name for p in attrs}, {p.name for p in attrs if p.default is p.empty})


def _missing_attrs(op_type: str, num_inputs: int, attrs) -> list[str]:
    """gradflow attrs ``op_type`` needs that neither the node, TF nor gradflow supplies."""
    _, required = _kernel_attrs(get_op_def(op_type), num_inputs)
    return sorted(required - set(attrs) - set(_GRADFLOW_DEFAULTS.get(op_type, {})))


def importable_op_types() -> list[str]:
    """The TF op types an imported GraphDef may contain: those gradflow also defines and
    whose kernels need no state a GraphDef cannot carry (random streams, loop records)
    and no function-valued attrs, and those it expands into its own ops."""
    result = list(_EXPANDED)
    for op_type in sorted(set(TF_OP_DEFS) & set(registered_op_types())):
        spec = TF_OP_DEFS[op_type]
        if any(kind in ("func", "list(func)") for kind, _ in spec[0].values()):
            continue  # function-valued attrs are refused on import
        singles = sum(1 for _, number, kinds in spec[1] if not number and not kinds)
        if not _missing_attrs(op_type, singles, spec[0]):
            result.append(op_type)
    return sorted(result)


def _split_input(name: str) -> tuple[str, int, bool]:
    """``(node, output index, is_control)`` of a NodeDef input string."""
    if name.startswith("^"):
        return name[1:], -1, True
    node, _, index = name.partition(":")
    return node, int(index) if index else 0, False


def _gradflow_type(node, nodes: dict) -> str:
    if node.op == "Identity" and node.input:
        source = nodes.get(_split_input(node.input[0])[0])
        if source is not None and source.op == "VariableV2":
            return "ReadVariableOp"
    return node.op


def _node_attrs(node, op_type: str, prefix: str, num_inputs: int,
                functions: "_Library") -> dict:
    """The node's attrs as the gradflow op takes them (see :func:`_kernel_attrs`)."""
    attrs = {}
    spec = TF_OP_DEFS.get(node.op)
    if spec is not None:
        for name, (_, default) in spec[0].items():
            if default is not None and name not in node.attr:
                attrs[name] = python_value(attr_value_pb2.AttrValue.FromString(default),
                                           f"Node '{node.name}' attr '{name}'")
    for name, value in node.attr.items():
        if name in _DROPPED_ATTRS:
            continue
        if value.WhichOneof("value") == "func":
            attrs[name] = functions[value.func.name]
        else:
            attrs[name] = python_value(value, f"Node '{node.name}' attr '{name}'")
    for name, value in _GRADFLOW_DEFAULTS.get(op_type, {}).items():
        attrs.setdefault(name, value)
    accepted, _ = _kernel_attrs(get_op_def(op_type), num_inputs)
    if accepted is not None:
        attrs = {k: v for k, v in attrs.items() if k in accepted or k.startswith("_")}
    if op_type == "VariableV2" and not attrs.get("shared_name"):
        # gradflow keys a variable's storage by its shared name; TF's "" means its own name
        attrs["shared_name"] = f"{prefix}/{node.name}" if prefix else node.name
    if "_class" in attrs:  # colocation names move under the prefix too
        attrs["_class"] = [_prefixed_class(c, prefix) for c in attrs["_class"]]
    return attrs


def _prefixed_class(entry, prefix: str) -> bytes:
    entry = entry.encode("utf-8") if isinstance(entry, str) else entry
    if prefix and entry.startswith(b"loc:@"):
        return b"loc:@" + prefix.encode("utf-8") + b"/" + entry[5:]
    return entry


def _topological(graph_def, nodes: dict, input_map: dict) -> list:
    """The nodes with every input before its consumer; ValueError on a missing input or
    a cycle."""
    pending = {}
    consumers: dict[str, list[str]] = {name: [] for name in nodes}
    for node in graph_def.node:
        count = 0
        for entry in node.input:
            source, index, control = _split_input(entry)
            if not control and f"{source}:{index}" in input_map:
                continue
            if control and "^" + source in input_map:
                continue
            if source not in nodes:
                raise ValueError(f"Node '{node.name}': Unknown input node '{entry}'")
            consumers[source].append(node.name)
            count += 1
        pending[node.name] = count
    ready = [node.name for node in graph_def.node if pending[node.name] == 0]
    order = []
    while ready:
        name = ready.pop(0)
        order.append(nodes[name])
        for consumer in consumers[name]:
            pending[consumer] -= 1
            if pending[consumer] == 0:
                ready.append(consumer)
    if len(order) != len(nodes):
        stuck = sorted(name for name, count in pending.items() if count)[:5]
        raise ValueError(f"GraphDef has a cycle through nodes {stuck} (TF1 while loops in "
                         "raw frame ops are not supported)")
    return order


def _checked(graph_def) -> dict:
    foreign = [f.signature.name for f in graph_def.library.function
               if not f.attr[GRADFLOW_BODY_ATTR].b]
    if foreign:
        raise ValueError(f"GraphDef has a function library ({foreign[:5]}); importing TF's "
                         "functions is not supported (only gradflow's own, written by "
                         "gradflow.io.graph_def.function_library)")
    nodes = {}
    for node in graph_def.node:
        if node.name in nodes:
            raise ValueError(f"Duplicate node name in graph: '{node.name}'")
        nodes[node.name] = node
    for node in graph_def.node:
        _check_interface(node)
        if node.op in _EXPANDED:
            continue
        op_type = _gradflow_type(node, nodes)
        try:
            get_op_def(op_type)
        except ValueError:
            raise ValueError(f"Node '{node.name}': op type '{node.op}' is not supported by "
                             "gradflow, so this GraphDef cannot be imported") from None
        defaults = TF_OP_DEFS.get(node.op, ({}, [], []))[0]
        missing = _missing_attrs(op_type, _num_inputs(node), set(node.attr) | {
            k for k, (_, default) in defaults.items() if default is not None})
        if missing:
            raise ValueError(f"Node '{node.name}': op type '{node.op}' needs gradflow state "
                             f"{missing} that a GraphDef does not carry, so it cannot be "
                             "imported")
    return nodes


def _check_interface(node) -> None:
    """TF's checks of a node against its op: required attrs present, input count right."""
    spec = TF_OP_DEFS.get(node.op)
    if spec is None:
        return
    attrs, args, _ = spec
    for name, (kind, default) in attrs.items():
        if default is None and name not in node.attr:
            raise ValueError(f"Node '{node.name}': NodeDef missing attr '{name}' required by "
                             f"op type '{node.op}'")
        if name in node.attr:
            field = node.attr[name].WhichOneof("value")
            expected = "list" if kind.startswith("list(") else _ATTR_FIELDS.get(kind, field)
            if field != expected:
                raise ValueError(f"Node '{node.name}': attr '{name}' holds a {field} value "
                                 f"where op type '{node.op}' expects {kind}")
    singles = sum(1 for _, number, kinds in args if not number and not kinds)
    lists = len(args) - singles
    count = _num_inputs(node)
    if count < singles + lists or (not lists and count != singles):
        raise ValueError(f"Node '{node.name}': op type '{node.op}' takes {len(args)} "
                         f"input arg(s), the node has {count} input(s)")


def _num_inputs(node) -> int:
    return sum(1 for entry in node.input if not entry.startswith("^"))


def _normalized_input_map(input_map: Optional[dict]) -> dict:
    result = {}
    for key, value in (input_map or {}).items():
        if not isinstance(key, str):
            raise TypeError(f"input_map keys must be strings, got {key!r}")
        if key.startswith("^"):
            if not isinstance(value, Operation):
                raise ValueError(f"input_map[{key!r}] must be an Operation, got {value!r}")
            result[key] = value
            continue
        if not isinstance(value, Tensor):
            raise TypeError(f"input_map[{key!r}] must be a Tensor, got {value!r}")
        source, index, _ = _split_input(key)
        result[f"{source}:{index}"] = value
    return result


def import_graph_def(graph_def, input_map: Optional[dict] = None,
                     return_elements: Optional[list] = None, name: Optional[str] = None,
                     op_dict=None, producer_op_list=None):
    """Imports ``graph_def`` into the default graph (TF1's ``tf.import_graph_def``).

    Args:
      graph_def: a ``GraphDef`` (TF's or gradflow's) or its serialized bytes.
      input_map: ``{"node:i": Tensor}`` (or ``"^node": Operation``) replacing inputs.
      return_elements: names (``"op"`` or ``"op:i"``) of what to return.
      name: the prefix of the imported names (default ``"import"``; ``""``: none).
      op_dict: must be None (deprecated in TF1 too).
      producer_op_list: accepted; defaults are filled from TF's op definitions anyway.

    Returns the Operations/Tensors of ``return_elements`` in order, or None.
    """
    if op_dict is not None:
        raise ValueError("op_dict is deprecated and must be None")
    del producer_op_list  # the attr defaults it would restore are filled from TF_OP_DEFS
    if isinstance(graph_def, bytes):
        try:
            graph_def = graph_pb2.GraphDef.FromString(graph_def)
        except message.DecodeError as err:
            raise ValueError(f"graph_def bytes are not a GraphDef: {err}") from None
    if not isinstance(graph_def, graph_pb2.GraphDef):
        raise TypeError(f"graph_def must be a GraphDef proto, got {type(graph_def).__name__}")
    inputs = _normalized_input_map(input_map)
    nodes = _checked(graph_def)
    order = _topological(graph_def, nodes, inputs)
    for key in inputs:
        source = key.lstrip("^").rsplit(":", 1)[0]
        if source not in nodes:
            raise ValueError(f"Attempted to map inputs that were not found in graph_def: "
                             f"[{key}]")
    graph = get_default_graph()
    with graph.atomic():
        functions = _Library(graph_def.library, graph)
        created = _create_ops(graph, order, nodes, inputs, "import" if name is None else name,
                              functions)
        if return_elements is None:
            return None
        return [_return_element(created, element) for element in return_elements]


def _create_ops(graph: Graph, order: list, nodes: dict, inputs: dict, name: str,
                functions: "_Library") -> dict:
    """The ops of ``order``; maps each node name to ``(op, its output tensors)``."""
    created: dict[str, tuple[Operation, list]] = {}
    scope = graph.unique_name(name) if name else ""
    for node in order:
        op_type = _gradflow_type(node, nodes)
        data, controls = [], []
        for entry in node.input:
            source, index, control = _split_input(entry)
            if control:
                controls.append(inputs.get("^" + source) or created[source][0])
                continue
            mapped = inputs.get(f"{source}:{index}")
            if mapped is None:
                outputs = created[source][1]
                if index >= len(outputs):
                    raise ValueError(f"Node '{node.name}': input '{entry}' names output "
                                     f"{index} but '{source}' has {len(outputs)} outputs")
                mapped = outputs[index]
            data.append(mapped)
        full_name = f"{scope}/{node.name}" if scope else node.name
        try:
            with graph.device(node.device) if node.device else contextlib.nullcontext():
                ops = _node_ops(graph, node, op_type, data, scope, full_name, functions)
        except (TypeError, ValueError, KeyError, IndexError) as err:
            # a shape function's complaint about this node's attrs or inputs
            raise ValueError(f"Node '{node.name}' ({node.op}): {err}") from None
        if controls:
            for op in ops:
                op.add_control_inputs(controls)
        created[node.name] = (ops[0], [t for op in ops for t in op.outputs])
    return created


def _node_ops(graph: Graph, node, op_type: str, data: list, scope: str,
              full_name: str, functions: "_Library") -> list[Operation]:
    """The op(s) standing for ``node``: one, or one per input for an expanded type."""
    if node.op not in _EXPANDED:
        attrs = _node_attrs(node, op_type, scope, len(data), functions)
        return [graph.create_op(op_type, data, attrs, name=full_name + "/")]
    out_type = python_value(node.attr["out_type"], node.name) if "out_type" in node.attr \
        else dtype_from_enum(3)
    return [graph.create_op(_EXPANDED[node.op], [tensor], {"out_type": out_type},
                            name=full_name + ("/" if i == 0 else f"/{i}/"))
            for i, tensor in enumerate(data)]


class _Library(dict):
    """The graph functions of a GraphDef's library (``io.graph_def.function_library``'s
    form), each rebuilt as a ``Function`` the first time a node names it."""

    def __init__(self, library, graph: Graph):
        super().__init__()
        self._defs = {f.signature.name: f for f in library.function}
        self._graph = graph

    def __missing__(self, name: str) -> Function:
        definition = self._defs.get(name)
        if definition is None:
            raise ValueError(f"function '{name}' is not in the GraphDef's library")
        body = graph_pb2.GraphDef(node=definition.node_def)
        nodes = _checked(body)
        inner = FuncGraph(name, self._graph)
        with inner.as_default():
            created = _create_ops(inner, _topological(body, nodes, {}), nodes, {}, "", self)
        inner.inputs = [_return_element(created, arg.name + ":0")
                        for arg in definition.signature.input_arg]
        inner.outputs = [_return_element(created, definition.ret[arg.name])
                         for arg in definition.signature.output_arg]
        function = self[name] = Function(inner, inner.inputs, inner.outputs, name=name)
        return function


def _return_element(created: dict, element):
    if not isinstance(element, str):
        raise TypeError(f"return_elements must be names, got {element!r}")
    source, index, _ = _split_input(element)
    if source not in created:
        raise ValueError(f"Requested return_element {element!r} not found in graph_def.")
    if ":" not in element:
        return created[source][0]
    outputs = created[source][1]
    if index >= len(outputs):
        raise ValueError(f"Requested return_element {element!r} not found in graph_def.")
    return outputs[index]
