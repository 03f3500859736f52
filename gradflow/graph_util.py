"""``gf.graph_util``: TF1's GraphDef utilities (freezing, pruning, shapes by node name).

They work on ``GraphDef`` protos (TF's or gradflow's): ``convert_variables_to_constants``
replaces each ``VariableV2`` that the outputs need by a ``Const`` holding its value in a
session, after pruning to those outputs, as TF1's freeze tool does.
"""
from __future__ import annotations

from typing import Optional

from tensorboard.compat.proto import attr_value_pb2, graph_pb2, node_def_pb2

from gradflow.framework.graph import Graph
from gradflow.framework.tensor_proto import make_tensor_proto
from gradflow.framework.tensor_shape import TensorShape

__all__ = ["convert_variables_to_constants", "extract_sub_graph", "remove_training_nodes",
           "tensor_shape_from_node_def_name"]

_TRAINING_ONLY = ("Identity", "CheckNumerics")


def _node_name(entry: str) -> str:
    return entry.lstrip("^").split(":")[0]


def _check_graph_def(graph_def) -> None:
    if not isinstance(graph_def, graph_pb2.GraphDef):
        raise TypeError("graph_def must be a graph_pb2.GraphDef proto, got "
                        f"{type(graph_def).__name__}")


def extract_sub_graph(graph_def, dest_nodes: list) -> graph_pb2.GraphDef:
    """The nodes ``dest_nodes`` need (data and control inputs), in their original order."""
    _check_graph_def(graph_def)
    if isinstance(dest_nodes, str):
        raise TypeError("dest_nodes must be a list.")
    nodes = {node.name: node for node in graph_def.node}
    for name in dest_nodes:
        if name not in nodes:
            raise AssertionError(f"{name} is not in graph")
    keep = set()
    stack = list(dest_nodes)
    while stack:
        name = stack.pop()
        if name in keep:
            continue
        keep.add(name)
        stack.extend(_node_name(entry) for entry in nodes[name].input
                     if _node_name(entry) in nodes)
    result = graph_pb2.GraphDef()
    result.versions.CopyFrom(graph_def.versions)
    result.library.CopyFrom(graph_def.library)
    result.node.extend(node for node in graph_def.node if node.name in keep)
    return result


def convert_variables_to_constants(sess, input_graph_def, output_node_names: list,
                                   variable_names_whitelist: Optional[list] = None,
                                   variable_names_blacklist: Optional[list] = None
                                   ) -> graph_pb2.GraphDef:
    """``input_graph_def`` pruned to ``output_node_names`` with its variables frozen to
    their values in ``sess`` (only those in the whitelist / not in the blacklist)."""
    pruned = extract_sub_graph(input_graph_def, output_node_names)
    wanted = [node.name for node in pruned.node if node.op == "VariableV2"
              and (variable_names_whitelist is None or node.name in variable_names_whitelist)
              and node.name not in (variable_names_blacklist or ())]
    values = dict(zip(wanted, sess.run([_variable_value(sess.graph, name) for name in wanted]),
                      strict=True))
    result = graph_pb2.GraphDef()
    result.versions.CopyFrom(pruned.versions)
    result.library.CopyFrom(pruned.library)
    for node in pruned.node:
        if node.name in values:
            const = node_def_pb2.NodeDef(name=node.name, op="Const", device=node.device)
            const.attr["dtype"].CopyFrom(node.attr["dtype"])
            const.attr["value"].CopyFrom(attr_value_pb2.AttrValue(
                tensor=make_tensor_proto(values[node.name])))
            if "_class" in node.attr:
                const.attr["_class"].CopyFrom(node.attr["_class"])
            result.node.append(const)
        else:
            result.node.add().CopyFrom(node)
    return result


def _variable_value(graph: Graph, name: str):
    """A tensor reading variable ``name`` (its ``read``; the ref itself is not a value)."""
    ref = graph.get_operation_by_name(name).outputs[0]
    for consumer in ref.consumers():
        if consumer.type == "ReadVariableOp":
            return consumer.outputs[0]
    raise ValueError(f"Variable {name} has no read op to take its value from")


def remove_training_nodes(input_graph, protected_nodes: Optional[list] = None
                          ) -> graph_pb2.GraphDef:
    """``input_graph`` without ``Identity`` and ``CheckNumerics`` nodes (their consumers
    read the node's input instead), except protected ones and those with control
    inputs."""
    _check_graph_def(input_graph)
    protected = set(protected_nodes or ())
    forward = {}
    for node in input_graph.node:
        if node.op in _TRAINING_ONLY and node.name not in protected and node.input \
                and not any(entry.startswith("^") for entry in node.input):
            forward[node.name] = node.input[0]

    def resolved(entry: str) -> str:
        control = entry.startswith("^")
        name = entry.lstrip("^")
        seen = set()
        while name.split(":")[0] in forward and name not in seen:
            seen.add(name)
            if ":" in name and not name.endswith(":0"):
                break
            name = forward[name.split(":")[0]]
        return "^" + _node_name(name) if control else name

    result = graph_pb2.GraphDef()
    result.versions.CopyFrom(input_graph.versions)
    result.library.CopyFrom(input_graph.library)
    for node in input_graph.node:
        if node.name in forward:
            continue
        copy = result.node.add()
        copy.CopyFrom(node)
        del copy.input[:]
        copy.input.extend(resolved(entry) for entry in node.input)
    return result


def tensor_shape_from_node_def_name(graph: Graph, input_name: str) -> TensorShape:
    """The static shape of tensor ``input_name`` (``op`` means ``op:0``) of ``graph``."""
    name = input_name if ":" in input_name else input_name + ":0"
    return graph.get_tensor_by_name(name).shape

