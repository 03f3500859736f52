"""A gradflow graph as TensorFlow's ``GraphDef`` protocol buffer (``Graph.as_graph_def``),
and the ``NodeDef`` attr codec used both ways (:mod:`gradflow.io.graph_import` reads).

One ``NodeDef`` per op: its name (scopes as ``/``-separated prefixes, which TensorBoard
collapses into boxes), TF's op type, inputs as ``op`` / ``op:i`` / ``^op`` for control
inputs, its device and its attrs. Attr values are encoded by kind, not by op: Python
bools, ints, floats and strings, dtypes, shapes, arrays (as ``TensorProto``) and lists of
those; attrs holding Python objects that a GraphDef cannot carry (callables) are left
out. ``add_shapes`` adds TF's ``_output_shapes``.

For an op type TF also has (``tf_op_defs.TF_OP_DEFS``) the node is what TF expects: only
TF's attrs (and internal ``_``-prefixed ones such as ``_class``), with TF's type attrs
(``T``, ``Tidx``, ``Tshape``...) and list lengths (``N``) taken from the tensors and TF's
defaults for the rest, so TF imports it and the node matches TF's own; a variable's
``read`` (gradflow's ``ReadVariableOp``) is TF's ``Identity``.
Other ops keep every encodable attr and get ``T`` from their first input.
"""
from __future__ import annotations

import numbers
import os
from typing import Optional, Union

import numpy as np
from google.protobuf import text_format
from tensorboard.compat.proto import (attr_value_pb2, function_pb2, graph_pb2, node_def_pb2,
                                      types_pb2, versions_pb2)

from gradflow.framework import dtypes
from gradflow.framework.function import Function
from gradflow.framework.graph import (Graph, Operation, register_graph_def_converter,
                                      register_node_def_converter)
from gradflow.framework.tensor_proto import (
    datatype_enum, dtype_from_enum, make_ndarray, make_tensor_proto, shape_proto)
from gradflow.framework.tensor_shape import TensorShape
from gradflow.io.tf_op_defs import TF_OP_DEFS

__all__ = ["graph_to_graph_def", "attr_value", "python_value", "tf_op_type", "node_def",
           "write_graph", "full_node_def", "function_library", "GRADFLOW_BODY_ATTR"]

# The GraphDef version TF 2.21 writes; TensorBoard only reads it.
_PRODUCER = 1994


def _scalar_attr(value) -> Optional[attr_value_pb2.AttrValue]:
    if isinstance(value, (bool, np.bool_)):
        return attr_value_pb2.AttrValue(b=bool(value))
    if isinstance(value, dtypes.DType):
        return attr_value_pb2.AttrValue(type=datatype_enum(value))
    if isinstance(value, TensorShape):
        return attr_value_pb2.AttrValue(shape=shape_proto(value))
    if isinstance(value, numbers.Integral):
        return attr_value_pb2.AttrValue(i=int(value))
    if isinstance(value, numbers.Real):
        return attr_value_pb2.AttrValue(f=float(value))
    if isinstance(value, str):
        return attr_value_pb2.AttrValue(s=value.encode("utf-8"))
    if isinstance(value, bytes):
        return attr_value_pb2.AttrValue(s=value)
    if isinstance(value, (np.ndarray, np.generic)):
        return attr_value_pb2.AttrValue(tensor=make_tensor_proto(value))
    if isinstance(value, Function):  # its body goes to the GraphDef's library
        return attr_value_pb2.AttrValue(func=attr_value_pb2.NameAttrList(name=value.name))
    return None


def attr_value(value) -> Optional[attr_value_pb2.AttrValue]:
    """``value`` as an ``AttrValue``, or None when a GraphDef has no way to hold it."""
    if not isinstance(value, (list, tuple)):
        return _scalar_attr(value)
    items = [_scalar_attr(v) for v in value]
    if any(item is None for item in items):
        return None
    result = attr_value_pb2.AttrValue()
    result.list.SetInParent()
    for item in items:
        kind = item.WhichOneof("value")
        if kind == "tensor":
            result.list.tensor.add().CopyFrom(item.tensor)
        elif kind == "shape":
            result.list.shape.add().CopyFrom(item.shape)
        else:
            getattr(result.list, kind).append(getattr(item, kind))
    return result


_LIST_FIELDS = ("s", "i", "f", "b", "type", "shape", "tensor")


def _python_scalar(kind: str, value):
    if kind == "s":
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            return value
    if kind == "type":
        return dtype_from_enum(value)
    if kind == "shape":
        if value.unknown_rank:
            return TensorShape(None)
        return TensorShape([None if d.size < 0 else d.size for d in value.dim])
    if kind == "tensor":
        return _checked_ndarray(value)
    return value  # i, f, b: Python int, float, bool already


# A constant stored as one repeated value may expand to at most this many elements.
MAX_FILLED_ELEMENTS = 1 << 24


def _checked_ndarray(proto) -> np.ndarray:
    """The array of a ``TensorProto``, its shape checked against its data first, so a
    hostile proto cannot make it allocate more than it holds."""
    dims = [d.size for d in proto.tensor_shape.dim]
    if any(d < 0 for d in dims):
        raise ValueError(f"tensor shape {dims} has a negative size")
    count = 1
    for d in dims:
        count *= d
    itemsize = np.dtype(dtype_from_enum(proto.dtype).as_numpy_dtype).itemsize \
        if proto.dtype != 7 else 0  # DT_STRING
    if proto.tensor_content and len(proto.tensor_content) != count * itemsize:
        raise ValueError(f"tensor of shape {dims} holds {len(proto.tensor_content)} bytes, "
                         f"not {count * itemsize}")
    if not proto.tensor_content and count > MAX_FILLED_ELEMENTS:
        raise ValueError(f"tensor of shape {dims} ({count} elements) is larger than "
                         f"{MAX_FILLED_ELEMENTS} elements written as repeated values")
    return make_ndarray(proto)


def python_value(value: attr_value_pb2.AttrValue, where: str):
    """The gradflow attr value of an ``AttrValue`` (the inverse of :func:`attr_value`).

    Raises ValueError naming ``where`` for kinds gradflow cannot hold (functions,
    placeholders)."""
    kind = value.WhichOneof("value")
    if kind == "list":
        for field in _LIST_FIELDS:
            items = getattr(value.list, field)
            if len(items):
                return [_python_scalar(field, item) for item in items]
        if len(value.list.func):
            raise ValueError(f"{where}: function-valued attrs are not supported")
        return []
    if kind in ("func", "placeholder"):
        raise ValueError(f"{where}: {kind}-valued attrs are not supported")
    if kind is None:
        return []
    return _python_scalar(kind, getattr(value, kind))


def tf_op_type(op: Operation) -> str:
    """The op type TF calls ``op``: a variable's read is an ``Identity``."""
    return "Identity" if op.type == "ReadVariableOp" else op.type


def _arg_sizes(args: list, count: int) -> list[int]:
    """How many tensors each op-def arg takes when the op has ``count`` of them (at most
    one list arg takes what the single ones leave)."""
    singles = sum(1 for _, number, type_list in args if not number and not type_list)
    return [1 if not number and not type_list else count - singles
            for _, number, type_list in args]


def _fill_type_attrs(node: node_def_pb2.NodeDef, args: list, tensors: list, attrs: dict) -> None:
    """Sets TF's type, list-length and type-list attrs from the tensors of ``args``."""
    sizes = _arg_sizes(args, len(tensors))
    if any(size < 0 for size in sizes):
        return
    start = 0
    for (type_attr, number_attr, type_list_attr), size in zip(args, sizes, strict=True):
        group = tensors[start:start + size]
        start += size
        if type_attr and group and type_attr not in node.attr and type_attr in attrs:
            node.attr[type_attr].CopyFrom(attr_value(group[0].dtype))
        if number_attr and number_attr not in node.attr:
            node.attr[number_attr].i = size
        if type_list_attr and type_list_attr not in node.attr:
            node.attr[type_list_attr].CopyFrom(attr_value([t.dtype for t in group]))


def _input_name(tensor) -> str:
    op_name = tensor.op.name
    return op_name if tensor.value_index == 0 else f"{op_name}:{tensor.value_index}"


def node_def(op: Operation, add_shapes: bool = False) -> node_def_pb2.NodeDef:
    """The ``NodeDef`` of one op."""
    op_type = tf_op_type(op)
    node = node_def_pb2.NodeDef(name=op.name, op=op_type, device=op.device)
    node.input.extend(_input_name(t) for t in op.inputs)
    node.input.extend("^" + c.name for c in op.control_inputs)
    spec = TF_OP_DEFS.get(op_type)
    for name, value in sorted(op.attrs.items()):
        if spec is not None and name not in spec[0] and not name.startswith("_"):
            continue  # gradflow's own attr, which TF's op does not declare
        if op.type == "VariableV2" and name == "shared_name" and value == op.name:
            value = ""  # TF's way to say "shared under its own name"
        encoded = attr_value(value)
        if encoded is not None:
            node.attr[name].CopyFrom(encoded)
    if spec is not None:
        _fill_type_attrs(node, spec[1], list(op.inputs), spec[0])
        _fill_type_attrs(node, spec[2], list(op.outputs), spec[0])
        for name, (_, default) in spec[0].items():
            if default is not None and name not in node.attr:
                node.attr[name].ParseFromString(default)  # TF writes its defaults too
    elif op.inputs and "T" not in node.attr:
        node.attr["T"].CopyFrom(attr_value(op.inputs[0].dtype))
    if add_shapes and op.outputs:
        node.attr["_output_shapes"].CopyFrom(attr_value([t.shape for t in op.outputs]))
    return node


def node_summary(op: Operation) -> str:
    """One line naming ``op`` as TF1's error messages do:
    ``{{node MatMul}} = MatMul[T=DT_FLOAT, transpose_a=false](a, b)``."""
    node = node_def(op)
    attrs = ", ".join(f"{key}={_attr_text(node.attr[key])}" for key in sorted(node.attr)
                      if not key.startswith("_"))
    return f"{{{{node {node.name}}}}} = {node.op}[{attrs}]({', '.join(node.input)})"


def _attr_text(value: attr_value_pb2.AttrValue) -> str:
    kind = value.WhichOneof("value")
    if kind == "list":
        items = [_scalar_text(field, item) for field in ("s", "i", "f", "b", "type", "shape")
                 for item in getattr(value.list, field)]
        return "[" + ", ".join(items) + "]"
    return "" if kind is None else _scalar_text(kind, getattr(value, kind))


def _scalar_text(kind: str, item) -> str:
    if kind == "b":
        return "true" if item else "false"
    if kind == "s":
        return '"' + item.decode("utf-8", "backslashreplace") + '"'
    if kind == "f":
        return f"{item:g}"
    if kind == "type":
        return types_pb2.DataType.Name(item)
    if kind == "shape":
        if item.unknown_rank:
            return "<unknown>"
        return "[" + ",".join("?" if d.size < 0 else str(d.size) for d in item.dim) + "]"
    if kind == "tensor":
        return f"Tensor<type: {types_pb2.DataType.Name(item.dtype)}>"
    if kind == "func":
        return item.name
    return str(item)


# Marks a FunctionDef whose body ``function_library`` wrote (GraphDef-style names).
GRADFLOW_BODY_ATTR = "_gradflow_body"


def full_node_def(op: Operation, function_names: Optional[dict] = None
                  ) -> node_def_pb2.NodeDef:
    """The ``NodeDef`` of one op with gradflow's own attrs too (those TF's op lacks),
    so gradflow can rebuild the op exactly; ValueError for an attr no AttrValue holds.
    ``function_names``: the library name of each graph function (``function_library``)."""
    node = node_def(op)
    for name, value in op.attrs.items():
        if name not in node.attr and value is not None:
            encoded = attr_value(value)
            if encoded is None:
                raise ValueError(f"Operation '{op.name}' ({op.type}): attr '{name}' holds a "
                                 f"{type(value).__name__}, which a GraphDef cannot carry")
            node.attr[name].CopyFrom(encoded)
        if isinstance(value, Function) and function_names is not None:
            node.attr[name].func.name = function_names[value]
    return node


def function_library(ops) -> tuple[function_pb2.FunctionDefLibrary, dict]:
    """The graph functions ``ops`` run (at any depth of nesting) as ``FunctionDef``s, and
    each function's name in that library (two functions may share a Python name: the
    later ones get a ``_k`` suffix).

    Each body's nodes are ``full_node_def``s naming their inputs as a GraphDef does
    (``op:i``); the input arguments are the body's input placeholders, by name, and
    ``ret`` maps ``output_i`` to the tensor each output returns. gradflow's
    ``import_graph_def`` reads this back; TF's runtime would not (its bodies name
    tensors by output argument)."""
    names: dict = {}
    taken: set = set()
    pending = [list(ops)]
    while pending:
        for op in pending.pop():
            for value in op.attrs.values():
                if not isinstance(value, Function) or value in names:
                    continue
                name, k = value.name, 0
                while name in taken:
                    k += 1
                    name = f"{value.name}_{k}"
                taken.add(name)
                names[value] = name
                pending.append(value.graph.get_operations())
    library = function_pb2.FunctionDefLibrary()
    library.function.extend(_function_def(function, name, names)
                            for function, name in names.items())
    return library, names


def _function_def(function: Function, name: str, names: dict) -> function_pb2.FunctionDef:
    result = function_pb2.FunctionDef()
    result.signature.name = name
    result.attr[GRADFLOW_BODY_ATTR].b = True  # the body is in this module's form
    for t in function.inputs:
        result.signature.input_arg.add(name=t.op.name, type=datatype_enum(t.dtype))
    for i, t in enumerate(function.outputs):
        result.signature.output_arg.add(name=f"output_{i}", type=datatype_enum(t.dtype))
        result.ret[f"output_{i}"] = t.name
    result.node_def.extend(full_node_def(op, names) for op in function.graph.get_operations())
    return result


def graph_to_graph_def(graph: Graph, from_version: Optional[int] = None,
                       add_shapes: bool = False) -> graph_pb2.GraphDef:
    """``graph`` (its ops created after version ``from_version``, if given) as a GraphDef."""
    ops = graph.get_operations() if from_version is None else \
        graph.operations_since(from_version)
    result = graph_pb2.GraphDef(versions=versions_pb2.VersionDef(producer=_PRODUCER))
    result.node.extend(node_def(op, add_shapes) for op in ops)
    return result


def write_graph(graph_or_graph_def: Union[Graph, graph_pb2.GraphDef], logdir: str, name: str,
                as_text: bool = True) -> str:
    """Writes a graph (or a GraphDef) to ``logdir/name``, as text or binary protobuf, as
    TF1's ``tf.train.write_graph`` does; returns the path."""
    graph_def = graph_or_graph_def.as_graph_def() if isinstance(graph_or_graph_def, Graph) \
        else graph_or_graph_def
    if not isinstance(graph_def, graph_pb2.GraphDef):
        raise TypeError(f"graph_or_graph_def must be a gf.Graph or a GraphDef, got "
                        f"{type(graph_or_graph_def).__name__}")
    os.makedirs(logdir, exist_ok=True)
    path = os.path.join(logdir, name)
    if as_text:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text_format.MessageToString(graph_def))
    else:
        with open(path, "wb") as f:
            f.write(graph_def.SerializeToString())
    return path


register_graph_def_converter(graph_to_graph_def)
register_node_def_converter(node_def, node_summary)
