"""Lowerings of ``TensorArray`` ops of static size: a compiled array is one stacked array.

A TensorArray's flow (``ops/tensor_array.py``) holds, compiled, the array of shape
``[size, *element_shape]``; unwritten elements are zeros, as the kernels read them when
the element shape is known. Its gradient (a ``TensorArrayCotangent``) is the same
stack, zeros where it has no entry. An array lowers when its size is a plan-time
constant, it is not dynamically sized, and its element shape is known: declared, or
found at a write or scatter downstream of its flow (through loops, branches and calls).

Unlike the kernels, compiled arrays do not check for a second write to an index, a
second read of a cleared one, or indices out of range when the indices are computed at
run time (a loop's counter); misuse with constant indices keeps the array on NumPy, so
the kernel's error is raised (see docs/xla.md).
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from gradflow.backends.xla.lowerings import register
from gradflow.framework import dtypes
from gradflow.framework.constant import constant_value
from gradflow.framework.graph import Operation, Tensor
from gradflow.runtime.optimizer import FOLD_LIMIT_ELEMENTS, Constant, Node, Program

__all__ = ["element_shape", "with_static_sizes"]

_SEARCH_LIMIT = 10_000  # flows looked at before giving up on an element shape


def element_shape(op: Operation) -> Optional[tuple]:
    """The element shape of the array ``op`` (a TensorArrayV3) makes, if it can be known."""
    declared = op._attrs.get("element_shape")
    if declared is not None and declared.is_fully_defined():
        return tuple(declared.as_list())
    queue, seen = [op._outputs[0]], set()
    while queue and len(seen) < _SEARCH_LIMIT:
        flow = queue.pop()
        if flow in seen:
            continue
        seen.add(flow)
        for consumer in flow.consumers():
            found = _shape_at(consumer, flow, queue)
            if found is not None:
                return found
    return None


def _shape_at(consumer: Operation, flow: Tensor, queue: list) -> Optional[tuple]:
    """The element shape ``consumer`` shows for ``flow``, else None (queueing the flows
    it passes ``flow`` on as)."""
    kind = consumer._type
    if kind in ("TensorArrayWriteV3", "TensorArrayScatterV3"):
        value = consumer._inputs[2].shape
        if value.is_fully_defined():
            dims = tuple(value.as_list())
            return dims if kind == "TensorArrayWriteV3" else dims[1:]
        queue.append(consumer._outputs[0])
    elif kind in ("TensorArrayReadV3", "TensorArrayGatherV3"):
        hint = consumer._attrs.get("element_shape")
        if hint is not None and hint.is_fully_defined():
            return tuple(hint.as_list())
    elif kind == "Identity":
        queue.append(consumer._outputs[0])
    positions = [i for i, t in enumerate(consumer._inputs) if t is flow]
    if kind == "While":
        n = consumer._attrs["num_loop_vars"]
        for i in positions:
            queue.append(consumer._attrs["body"].inputs[i])
            if i < n:
                queue.append(consumer._outputs[i])
    elif kind == "If":
        for i in positions:
            if i:
                queue.extend(consumer._attrs[b].inputs[i - 1]
                             for b in ("then_branch", "else_branch"))
    elif kind == "PartitionedCall":
        queue.extend(consumer._attrs["f"].inputs[i] for i in positions)
    return None


def _new_lowers(op: Operation) -> bool:
    return not op._attrs.get("dynamic_size") and element_shape(op) is not None


@register("TensorArrayV3", static=(0,), variants=True, accepts=_new_lowers)
def _new(L, op, size):
    return L.jnp.zeros((int(size),) + element_shape(op), op._attrs["dtype"].as_numpy_dtype)


# ---------------------------------------------------------- misuse seen early
# Compiled arrays cannot raise the kernels' errors for a second write to an index, an
# index out of range, or a second read of a cleared element. Where the indices are
# constants the misuse is visible when the plan compiles: those ops stay on NumPy (and,
# their flows then crossing, the whole array), so the kernel raises its own error.
_WRITES = ("TensorArrayWriteV3", "TensorArrayScatterV3")
_READS = ("TensorArrayReadV3", "TensorArrayGatherV3")


def _constant_indices(t: Tensor) -> Optional[set]:
    value = constant_value(t)
    return None if value is None else {int(i) for i in np.reshape(value, -1)}


def _creator(flow: Tensor) -> Optional[Operation]:
    """The TensorArrayV3 op whose array ``flow`` carries, when found without leaving
    the graph (through writes and identities)."""
    op = flow.op
    while op._type in _WRITES + ("Identity",):
        op = op._inputs[0].op
    return op if op._type == "TensorArrayV3" else None


def _write_lowers(op: Operation) -> bool:
    indices = _constant_indices(op._inputs[1])
    if indices is None:
        return True
    creator = _creator(op._inputs[0])
    size = None if creator is None else constant_value(creator._inputs[0])
    if size is not None and any(not 0 <= i < int(size) for i in indices):
        return False
    earlier = op._inputs[0].op
    while earlier._type in _WRITES + ("Identity",):
        before = _constant_indices(earlier._inputs[1]) if earlier._type in _WRITES else set()
        if before is None or before & indices:
            return False
        earlier = earlier._inputs[0].op
    return True


def _read_lowers(op: Operation) -> bool:
    flow = op._inputs[0]
    creator = _creator(flow)
    if creator is None or not creator._attrs.get("clear_after_read"):
        return True
    mine = _constant_indices(op._inputs[1])
    for other in flow.consumers():
        if other is op or other._type not in _READS + ("TensorArrayConcatV3",):
            continue
        theirs = _constant_indices(other._inputs[1]) if other._type in _READS else None
        if mine is None or theirs is None or mine & theirs:
            return False
    return True


@register(_WRITES, variants=True, accepts=_write_lowers)
def _write(L, op, flow, index, value):
    return flow.at[index].set(L.jnp.asarray(value).astype(flow.dtype))


@register(_READS, variants=True, accepts=_read_lowers)
def _read(L, op, flow, index):
    return flow[index]


@register("TensorArraySizeV3", variants=True)
def _size(L, op, flow):
    return L.jnp.asarray(flow.shape[0], "int32")


@register("TensorArrayCloseV3", variants=True)
def _close(L, op, flow):
    return ()


def _not_concat(op: Operation) -> bool:
    return not op._attrs.get("concat")


@register("TensorArrayCotangentGather", static=(2,), variants=True, accepts=_not_concat)
def _cotangent_gather(L, op, cotangent, indices, shape):
    dense = L.jnp.reshape(cotangent[indices], tuple(int(d) for d in shape))
    if not op._attrs["remove"]:
        return dense
    return dense, cotangent.at[indices].set(L.jnp.zeros_like(cotangent[indices]))


@register("TensorArrayCotangentScatter", variants=True, accepts=_not_concat)
def _cotangent_scatter(L, op, cotangent, indices, dense):
    if op._attrs["replace"]:
        cotangent = cotangent.at[indices].set(L.jnp.zeros_like(cotangent[indices]))
    return cotangent.at[indices].add(L.jnp.asarray(dense).astype(cotangent.dtype))


# ------------------------------------------------------------ static sizes
def with_static_sizes(program: Program) -> Program:
    """``program`` with the sizes of compiled TensorArrays known at plan time.

    A TensorArray of constant size keeps it through writes, loops and identities, so
    ``TensorArraySizeV3`` of its flow is a constant here, and so is what pure ops
    compute from it alone (``stack()``'s ``range(size)``): those nodes are replaced by
    their values, giving their readers static inputs (and shapes) to compile with.
    """
    sizes: dict = {}  # flow tensor -> the array's size
    known: dict = {}  # tensor -> its value, computed now
    nodes = []
    fetched = {v for v in program.fetches if isinstance(v, Tensor)}
    for node in program.nodes:
        inputs = [Constant(known[v], v) if isinstance(v, Tensor) and v in known else v
                  for v in node.inputs]
        _track_sizes(node, inputs, sizes)
        # only what a size decides: nodes of constants alone were left unfolded on purpose
        derived = node.op._type == "TensorArraySizeV3" or any(
            isinstance(v, Tensor) and v in known for v in node.inputs)
        values = _values_now(node, inputs, sizes) if derived else None
        if values is not None and not any(t in fetched for t in node.outputs):
            known.update(zip(node.outputs, values, strict=True))
            continue
        nodes.append(node if inputs == node.inputs else Node(node.op, inputs, node.outputs))
    return program if not known else Program(nodes, program.fetches)


def _track_sizes(node, inputs: list, sizes: dict) -> None:
    kind = node.op._type
    outputs = node.outputs
    if kind == "TensorArrayV3" and isinstance(inputs[0], Constant) \
            and not node.op._attrs.get("dynamic_size"):
        sizes[outputs[0]] = int(inputs[0].value)
    elif kind in ("TensorArrayWriteV3", "TensorArrayScatterV3", "Identity") \
            and inputs[0] in sizes:
        sizes[outputs[0]] = sizes[inputs[0]]
    elif kind == "While":
        for i in range(node.op._attrs["num_loop_vars"]):
            if inputs[i] in sizes and outputs[i] is not None:
                sizes[outputs[i]] = sizes[inputs[i]]


def _values_now(node, inputs: list, sizes: dict) -> Optional[list]:
    """The node's output values if they can be computed now from sizes and constants."""
    op = node.op
    if op._type == "TensorArraySizeV3":
        return [np.int32(sizes[inputs[0]])] if inputs[0] in sizes else None
    if op._op_def.stateful or op._op_def.needs_context or not inputs or \
            not all(isinstance(v, Constant) for v in inputs) or None in node.outputs or \
            any(t.dtype.base_dtype is dtypes.variant for t in node.outputs):
        return None  # (an array made now would be a NumPy TensorArray, not a size)
    attrs = {k: v for k, v in op._attrs.items() if not k.startswith("_")}
    try:
        result = op._op_def.kernel(*(v.value for v in inputs), **attrs)
    except Exception:  # an op that fails now is left to fail at run time, as before
        return None
    results = [result] if len(node.outputs) == 1 else list(result)
    if sum(np.size(r) for r in results) > FOLD_LIMIT_ELEMENTS:
        return None  # too big to keep in the plan: computed at run time, as before
    return results
