"""A gradflow graph as TensorFlow's ``GraphDef`` protocol buffer (``Graph.as_graph_def``).

One ``NodeDef`` per op: its name (scopes as ``/``-separated prefixes, which TensorBoard
collapses into boxes), TF's op type, inputs as ``op`` / ``op:i`` / ``^op`` for control
inputs, its device and its attrs. Attr values are encoded by kind, not by op: Python
bools, ints, floats and strings, dtypes, shapes, arrays (as ``TensorProto``) and lists of
those; attrs holding Python objects that a GraphDef cannot carry (callables) are left
out. ``T`` (the first input's dtype) is added where an op has inputs and no ``T`` of its
own, and ``add_shapes`` adds TF's ``_output_shapes``.
"""
from __future__ import annotations

import numbers
import os
from typing import Optional, Union

import numpy as np
from google.protobuf import text_format
from tensorboard.compat.proto import attr_value_pb2, graph_pb2, node_def_pb2, versions_pb2

from gradflow.framework import dtypes
from gradflow.framework.graph import Graph, Operation, register_graph_def_converter
from gradflow.framework.tensor_proto import datatype_enum, make_tensor_proto, shape_proto
from gradflow.framework.tensor_shape import TensorShape

__all__ = ["graph_to_graph_def", "attr_value", "node_def", "write_graph"]

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


def _input_name(tensor) -> str:
    op_name = tensor.op.name
    return op_name if tensor.value_index == 0 else f"{op_name}:{tensor.value_index}"


def node_def(op: Operation, add_shapes: bool = False) -> node_def_pb2.NodeDef:
    """The ``NodeDef`` of one op."""
    node = node_def_pb2.NodeDef(name=op.name, op=op.type, device=op.device)
    node.input.extend(_input_name(t) for t in op.inputs)
    node.input.extend("^" + c.name for c in op.control_inputs)
    for name, value in sorted(op.attrs.items()):
        encoded = attr_value(value)
        if encoded is not None:
            node.attr[name].CopyFrom(encoded)
    if op.inputs and "T" not in node.attr:
        node.attr["T"].CopyFrom(attr_value(op.inputs[0].dtype))
    if add_shapes and op.outputs:
        node.attr["_output_shapes"].CopyFrom(attr_value([t.shape for t in op.outputs]))
    return node


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
