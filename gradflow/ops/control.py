"""Grouping and ordering: ``no_op``, ``group``, ``tuple`` and ``with_dependencies``."""
from __future__ import annotations

import builtins

from typing import Optional

from gradflow.framework.constant import convert_to_tensor
from gradflow.framework.graph import Operation, Tensor, get_default_graph
from gradflow.framework.indexed_slices import IndexedSlices
from gradflow.framework.registry import NotDifferentiable, define_op
from gradflow.ops import array

__all__ = ["no_op", "group", "tuple", "with_dependencies"]

define_op("NoOp", infer=lambda inputs, attrs: [], kernel=lambda: ())
NotDifferentiable("NoOp")


def no_op(name: Optional[str] = None) -> Operation:
    """An op that does nothing; useful as a target carrying control dependencies."""
    return get_default_graph().create_op("NoOp", (), {}, name=name or "NoOp")


def _flatten(values) -> list:
    flat, stack = [], [values]
    while stack:
        item = stack.pop()
        if isinstance(item, (list, builtins.tuple)):
            stack.extend(reversed(item))
        elif isinstance(item, dict):
            stack.extend(reversed(list(item.values())))
        else:
            flat.append(item)
    return flat


def _as_op(value) -> Operation:
    if isinstance(value, Operation):
        return value
    if isinstance(value, IndexedSlices):
        return value.values.op
    if isinstance(value, Tensor):
        return value.op
    op = getattr(value, "op", None)
    if isinstance(op, Operation):
        return op
    raise TypeError(f"Expected a gf.Operation or gf.Tensor, got {type(value).__name__}: "
                    f"{value!r}")


def group(*inputs, name: Optional[str] = None) -> Operation:
    """An op that runs after all ``inputs`` (ops or tensors, possibly nested lists)."""
    # each op once, in first-seen order (a dict, so wide groups stay linear)
    ops = list(dict.fromkeys(_as_op(item) for item in _flatten(list(inputs))
                             if item is not None))
    graph = ops[0].graph if ops else get_default_graph()
    # TF1's placement: ops on one device are grouped on that device; ops on several
    # get one ``<name>/NoOp`` per device (in device order) and the group waits for those
    by_device: dict = {}
    for op in ops:
        by_device.setdefault(op.device, []).append(op)
    with graph.as_default():
        if len(by_device) <= 1:
            with graph.device(ops[0].device if ops else ""), graph.control_dependencies(ops):
                return no_op(name=name or "group_deps")
        with graph.name_scope(name or "group_deps") as scope:
            gates = []
            for device in sorted(by_device):
                with graph.device(device), graph.control_dependencies(by_device[device]):
                    gates.append(no_op())
            with graph.control_dependencies(gates):
                return no_op(name=scope)


def tuple(tensors, name: Optional[str] = None, control_inputs=None) -> list:  # noqa: A001
    """Returns the tensors unchanged, each usable only once all of them are computed."""
    if not isinstance(tensors, (list, builtins.tuple)):
        raise TypeError("tensors must be a list or tuple of Tensors")
    present = [t for t in tensors if t is not None]
    if not present:
        return list(tensors)
    gate_inputs = present + list(control_inputs or ())
    graph = _as_op(present[0]).graph
    # TF1's names: ``tuple/group_deps`` and ``tuple/control_dependency[_i]``
    with graph.as_default(), graph.name_scope(name or "tuple"):
        gate = group(*gate_inputs, name=None)
        return [None if t is None else with_dependencies([gate], t, name="control_dependency")
                for t in tensors]


def with_dependencies(dependencies, output_tensor, name: Optional[str] = None):
    """``output_tensor``, readable only after ``dependencies`` have run."""
    graph = get_default_graph()
    # colocated with the tensor it passes on, as TF1's
    with graph.control_dependencies(dependencies), graph.colocate_with(_as_op(output_tensor)):
        if isinstance(output_tensor, IndexedSlices):
            return IndexedSlices(array.identity(output_tensor.values, name=name),
                                 output_tensor.indices, output_tensor.dense_shape)
        return array.identity(convert_to_tensor(output_tensor), name=name)
