"""TF's ``MetaGraphDef``: a GraphDef plus the ``SaverDef`` and the collections.

Export: the graph's ``GraphDef`` (:mod:`gradflow.io.graph_def`), its collections
(variables as ``VariableDef`` protos, tensors and ops as ``node_list`` names, strings and
numbers as value lists; other Python objects are left out with a warning, as TF does), and,
for a Saver, TF's own saver subgraph (``save/Const``, ``SaveV2``, ``RestoreV2``, one
``Assign`` per variable, ``save/restore_all``) in place of gradflow's restore ops, so TF's
``import_meta_graph`` gets a Saver that works.

Import: the saver's subgraph (the scope of ``SaverDef.restore_op_name``) is left out
and the caller builds a gradflow Saver over the variables; every other node is imported
with :func:`gradflow.io.graph_import.import_graph_def` and the collections are rebuilt
(``VariableDef`` entries become Variables, names become tensors or ops).
"""
from __future__ import annotations

import logging
import numbers
import os
from typing import Optional

import numpy as np
from google.protobuf import message, text_format
from tensorboard.compat.proto import (
    attr_value_pb2, graph_pb2, meta_graph_pb2, node_def_pb2, saver_pb2, variable_pb2)

from gradflow.framework import errors
from gradflow.framework.graph import Graph, GraphKeys, Operation, Tensor
from gradflow.framework.tensor_proto import make_tensor_proto
from gradflow.io.graph_def import attr_value, graph_to_graph_def
from gradflow.io.graph_import import import_graph_def
from gradflow.io.tf_op_defs import TF_OP_DEFS
from gradflow.ops.state import Variable

__all__ = ["build_meta_graph_def", "read_meta_graph_def", "import_meta_graph_def",
           "saver_def_for", "write_proto", "MAX_META_GRAPH_BYTES"]

logger = logging.getLogger("gradflow")

MAX_META_GRAPH_BYTES = 1 << 31  # protobuf's own limit on one message
# TF's checkpoint op types: a Saver's ops in a TF graph, replaced by gradflow's Saver.
_SAVER_OP_TYPES = frozenset({"SaveV2", "RestoreV2", "MergeV2Checkpoints", "Save", "Restore",
                             "SaveSlices", "RestoreSlice", "ShardedFilename",
                             "ShardedFilespec", "StringJoin"})
_VARIABLE_COLLECTIONS = frozenset({
    GraphKeys.GLOBAL_VARIABLES, GraphKeys.LOCAL_VARIABLES, GraphKeys.MODEL_VARIABLES,
    GraphKeys.TRAINABLE_VARIABLES, GraphKeys.MOVING_AVERAGE_VARIABLES, GraphKeys.GLOBAL_STEP,
    "metric_variables"})


def saver_def_for(scope: str, max_to_keep: int, keep_hours: float,
                  sharded: bool) -> saver_pb2.SaverDef:
    """The ``SaverDef`` naming TF's saver subgraph under ``scope``."""
    return saver_pb2.SaverDef(
        filename_tensor_name=f"{scope}/Const:0",
        save_tensor_name=f"{scope}/control_dependency:0",
        restore_op_name=f"{scope}/restore_all", max_to_keep=max_to_keep or 0,
        keep_checkpoint_every_n_hours=keep_hours, sharded=sharded,
        version=saver_pb2.SaverDef.V2)


def _node(name: str, op: str, inputs=(), **attrs) -> node_def_pb2.NodeDef:
    node = node_def_pb2.NodeDef(name=name, op=op, input=list(inputs))
    for key, value in attrs.items():
        node.attr[key].CopyFrom(value if isinstance(value, attr_value_pb2.AttrValue)
                                else attr_value(value))
    return node


def _string_const(name: str, values) -> node_def_pb2.NodeDef:
    array = np.array([v.encode("utf-8") for v in values], dtype=object) \
        if isinstance(values, list) else np.array(values.encode("utf-8"), dtype=object)
    from_array = attr_value_pb2.AttrValue(tensor=make_tensor_proto(array, "string"))
    return _node(name, "Const", dtype=_STRING, value=from_array)


def _saver_nodes(scope: str, variables: dict) -> list[node_def_pb2.NodeDef]:
    """TF's V2 saver subgraph for ``variables`` (checkpoint key -> Variable)."""
    keys = sorted(variables)
    refs = [variables[key].op.name for key in keys]
    kinds = [variables[key].dtype for key in keys]
    nodes = [
        _string_const(f"{scope}/filename/input", "model"),
        _node(f"{scope}/filename", "PlaceholderWithDefault", [f"{scope}/filename/input"],
              dtype=_STRING, shape=attr_value_pb2.AttrValue(shape={})),
        _node(f"{scope}/Const", "PlaceholderWithDefault", [f"{scope}/filename"],
              dtype=_STRING, shape=attr_value_pb2.AttrValue(shape={})),
        _string_const(f"{scope}/SaveV2/tensor_names", keys),
        _string_const(f"{scope}/SaveV2/shape_and_slices", [""] * len(keys)),
        _node(f"{scope}/SaveV2", "SaveV2", [f"{scope}/Const", f"{scope}/SaveV2/tensor_names",
                                            f"{scope}/SaveV2/shape_and_slices", *refs],
              dtypes=kinds),
        _node(f"{scope}/control_dependency", "Identity",
              [f"{scope}/Const", f"^{scope}/SaveV2"], T=_STRING,
              _class=[f"loc:@{scope}/Const".encode("utf-8")]),
        _string_const(f"{scope}/RestoreV2/tensor_names", keys),
        _string_const(f"{scope}/RestoreV2/shape_and_slices", [""] * len(keys)),
        _node(f"{scope}/RestoreV2", "RestoreV2",
              [f"{scope}/Const", f"{scope}/RestoreV2/tensor_names",
               f"{scope}/RestoreV2/shape_and_slices"], dtypes=kinds),
    ]
    assigns = []
    for i, (ref, kind) in enumerate(zip(refs, kinds, strict=True)):
        name = f"{scope}/Assign" + (f"_{i}" if i else "")
        assigns.append(name)
        nodes.append(_node(name, "Assign", [ref, f"{scope}/RestoreV2:{i}" if i else
                                            f"{scope}/RestoreV2"],
                           T=kind, validate_shape=True, use_locking=True,
                           _class=[f"loc:@{ref}".encode("utf-8")]))
    nodes.append(_node(f"{scope}/restore_all", "NoOp", ["^" + a for a in assigns]))
    return nodes


_STRING = attr_value_pb2.AttrValue(type=7)  # DT_STRING


def _variable_def(var: Variable) -> bytes:
    return variable_pb2.VariableDef(
        variable_name=var.name, initial_value_name=var.initial_value.name,
        initializer_name=var.initializer.name, snapshot_name=var.value().name,
        trainable=bool(var.trainable)).SerializeToString()


def _collection_def(key: str, values: list) -> Optional[meta_graph_pb2.CollectionDef]:
    """``values`` as a ``CollectionDef``, or None (logged) when they cannot be stored."""
    result = meta_graph_pb2.CollectionDef()
    if all(isinstance(v, Variable) for v in values):
        result.bytes_list.value.extend(_variable_def(v) for v in values)
    elif all(isinstance(v, (Tensor, Operation)) for v in values):
        result.node_list.value.extend(v.name for v in values)
    elif all(isinstance(v, (str, bytes)) for v in values):
        result.bytes_list.value.extend(v.encode("utf-8") if isinstance(v, str) else v
                                       for v in values)
    elif all(isinstance(v, numbers.Integral) for v in values):
        result.int64_list.value.extend(int(v) for v in values)
    elif all(isinstance(v, numbers.Real) for v in values):
        result.float_list.value.extend(float(v) for v in values)
    else:
        logger.warning("Issue encountered when serializing %s: its values are not "
                       "Variables, tensors, ops, strings or numbers; left out", key)
        return None
    return result


def build_meta_graph_def(graph: Graph, saver_scope: Optional[str] = None,
                         saver_def: Optional[saver_pb2.SaverDef] = None,
                         saver_variables: Optional[dict] = None,
                         collection_list: Optional[list] = None,
                         clear_devices: bool = False,
                         graph_def: Optional[graph_pb2.GraphDef] = None
                         ) -> meta_graph_pb2.MetaGraphDef:
    """``graph`` as a MetaGraphDef; with a saver, its ops (under ``saver_scope``) are
    replaced by TF's saver subgraph for ``saver_variables``."""
    if graph_def is None:
        graph_def = graph_to_graph_def(graph, add_shapes=False)
    result = meta_graph_pb2.MetaGraphDef()
    result.graph_def.versions.CopyFrom(graph_def.versions)
    result.graph_def.library.CopyFrom(graph_def.library)
    prefix = saver_scope + "/" if saver_scope else None
    for node in graph_def.node:
        if prefix and node.name.startswith(prefix):
            continue
        copy = result.graph_def.node.add()
        copy.CopyFrom(node)
        if clear_devices:
            copy.device = ""
    if saver_scope and saver_variables:
        result.graph_def.node.extend(_saver_nodes(saver_scope, saver_variables))
    if saver_def is not None:
        result.saver_def.CopyFrom(saver_def)
    keys = graph.get_all_collection_keys() if collection_list is None else collection_list
    for key in sorted(keys):
        values = [v for v in graph.get_collection(key)
                  if not (prefix and isinstance(v, (Tensor, Operation))
                          and v.name.startswith(prefix))]
        if not values or key == GraphKeys.SAVERS:
            continue
        collection = _collection_def(key, values)
        if collection is not None:
            result.collection_def[key].CopyFrom(collection)
    return result


def strip_default_attrs(meta: meta_graph_pb2.MetaGraphDef) -> None:
    """Removes from ``meta``'s nodes (functions' included) each attr equal to its TF
    default, and marks it ``stripped_default_attrs``, as TF's exporters do when asked:
    a reader fills the defaults back in."""
    nodes = list(meta.graph_def.node)
    for function in meta.graph_def.library.function:
        nodes.extend(function.node_def)
    for node in nodes:
        declared = TF_OP_DEFS.get(node.op)
        if declared is None:
            continue
        for name, (_, default) in declared[0].items():
            if default is not None and name in node.attr and \
                    node.attr[name] == attr_value_pb2.AttrValue.FromString(default):
                del node.attr[name]
    meta.meta_info_def.stripped_default_attrs = True


def write_proto(proto, path: str, as_text: bool) -> None:
    """Writes ``proto`` to ``path``, as a text proto or binary."""
    directory = os.path.dirname(path)
    if directory:
        os.makedirs(directory, exist_ok=True)
    if as_text:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text_format.MessageToString(proto))
    else:
        with open(path, "wb") as f:
            f.write(proto.SerializeToString())


def read_meta_graph_def(path: str) -> meta_graph_pb2.MetaGraphDef:
    """The MetaGraphDef in file ``path`` (binary, or text format as TF also accepts).

    NotFoundError when there is no such regular file; DataLossError naming it when it is
    neither."""
    if not os.path.isfile(path):
        raise errors.NotFoundError(None, None, f"File {path} does not exist (or is not a "
                                   "regular file).")
    size = os.path.getsize(path)
    if size > MAX_META_GRAPH_BYTES:
        raise errors.DataLossError(None, None, f"{path}: {size} bytes, more than a "
                                   "MetaGraphDef may hold")
    with open(path, "rb") as f:
        data = f.read(size + 1)
    result = meta_graph_pb2.MetaGraphDef()
    try:
        result.ParseFromString(data)
        return result
    except message.DecodeError:
        pass
    try:
        text_format.Parse(data.decode("utf-8"), result)
    except (UnicodeDecodeError, text_format.ParseError) as err:
        raise errors.DataLossError(None, None, f"{path} is not a MetaGraphDef (neither "
                                   f"binary nor text format): {err}") from None
    return result


def import_meta_graph_def(meta: meta_graph_pb2.MetaGraphDef, graph: Graph,
                          import_scope: Optional[str] = None, clear_devices: bool = False,
                          input_map: Optional[dict] = None) -> list[Variable]:
    """Imports ``meta`` into ``graph`` (its default); returns its global variables.

    The saver's subgraph is not imported: the caller makes a Saver of its own."""
    prefix = None
    if meta.HasField("saver_def") and "/" in meta.saver_def.restore_op_name:
        prefix = meta.saver_def.restore_op_name.rsplit("/", 1)[0] + "/"
    dropped = _saver_subgraphs(meta.graph_def, prefix)
    graph_def = graph_pb2.GraphDef()
    graph_def.versions.CopyFrom(meta.graph_def.versions)
    graph_def.library.CopyFrom(meta.graph_def.library)
    for node in meta.graph_def.node:
        if node.name in dropped:
            continue
        copy = graph_def.node.add()
        copy.CopyFrom(node)
        if clear_devices:
            copy.device = ""
    with graph.atomic(), graph.as_default():
        import_graph_def(graph_def, input_map=input_map, name=import_scope or "")
        return _restore_collections(meta, graph, import_scope, dropped)


def _saver_subgraphs(graph_def, prefix: Optional[str]) -> set:
    """The nodes of TF savers: the ``SaverDef``'s scope, nodes of TF's checkpoint op
    types (a graph may hold several savers) and everything that depends on them."""
    dropped = {node.name for node in graph_def.node
               if (prefix and node.name.startswith(prefix)) or node.op in _SAVER_OP_TYPES}
    changed = True
    while changed:
        changed = False
        for node in graph_def.node:
            if node.name not in dropped and any(
                    entry.lstrip("^").split(":")[0] in dropped for entry in node.input):
                dropped.add(node.name)
                changed = True
    return dropped


def _restore_collections(meta, graph: Graph, import_scope: Optional[str],
                         dropped: set) -> list[Variable]:
    def scoped(name: str) -> str:
        return f"{import_scope}/{name}" if import_scope else name

    variables: dict[str, Variable] = {}
    for key in sorted(meta.collection_def):
        collection = meta.collection_def[key]
        kind = collection.WhichOneof("kind")
        if kind == "bytes_list" and key in _VARIABLE_COLLECTIONS:
            for data in collection.bytes_list.value:
                proto = variable_pb2.VariableDef.FromString(data)
                name = scoped(proto.variable_name.split(":")[0])
                if name not in variables:
                    variables[name] = Variable.from_ops(graph.get_operation_by_name(name),
                                                        trainable=proto.trainable)
                graph.add_to_collection(key, variables[name])
        elif kind == "node_list":
            for name in collection.node_list.value:
                if name.split(":")[0] in dropped:
                    continue
                graph.add_to_collection(key, graph.as_graph_element(scoped(name)))
        elif kind is not None:
            for value in getattr(collection, kind).value:
                graph.add_to_collection(key, value)
    return list(graph.get_collection(GraphKeys.GLOBAL_VARIABLES))
