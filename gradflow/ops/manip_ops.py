"""``roll``: elements shifted cyclically along axes (TF1's ``tf.roll`` / ``tf.manip.roll``).

The ``Roll`` primitive under TF's type name: ``input`` of rank >= 1, ``shift`` and
``axis`` int32/int64 scalars or vectors of one length; shifts of a repeated axis add up,
a negative axis counts from the end, and an axis out of range fails the run with TF's
``axis 2 is out of range``. Its gradient rolls the incoming gradient back (``-shift``).
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from gradflow.framework import dtypes, errors
from gradflow.framework.constant import convert_to_tensor
from gradflow.framework.registry import RegisterGradient, define_op
from gradflow.ops.common import graph_for
from gradflow.ops.math.elementwise import negative

__all__ = ["roll"]

_INDEX_TYPES = (dtypes.int32, dtypes.int64)


def _infer(inputs, attrs):
    value, shift, axis = (t.shape for t in inputs)
    shapes = f"{value}, {shift}, {axis}"
    if value.ndims is not None and value.ndims < 1:
        raise ValueError(f"Shape must be at least rank 1 but is rank 0 for 'Roll' with "
                         f"input shapes: {shapes}.")
    for shape in (shift, axis):
        if shape.ndims is not None and shape.ndims > 1:
            raise ValueError(f"Shape must be at most rank 1 but is rank {shape.ndims} for "
                             f"'Roll' with input shapes: {shapes}.")
    if shift.ndims is not None and axis.ndims is not None:
        if shift.ndims != axis.ndims or (shift.ndims == 1 and None not in (
                shift[0].value, axis[0].value) and shift[0].value != axis[0].value):
            shift_dims, axis_dims = shift.as_list(), axis.as_list()
            raise ValueError(f"Dimension 0 in both shapes must be equal, but are "
                             f"{(shift_dims or [1])[0]} and {(axis_dims or [1])[0]}. Shapes "
                             f"are {_dims(shift_dims)} and {_dims(axis_dims)}. for 'Roll' "
                             f"with input shapes: {shapes}.")
    return [(inputs[0].dtype, value)]


def _dims(dims: list) -> str:
    """A shape as TF's messages print it: ``[2]``, ``[?,3]``."""
    return "[" + ",".join("?" if d is None else str(d) for d in dims) + "]"


def _kernel(value, shift, axis, **_):
    value = np.asarray(value)
    shifts = np.asarray(shift).reshape(-1).astype(np.int64)
    axes = np.asarray(axis).reshape(-1).astype(np.int64)
    if shifts.shape != axes.shape:
        raise errors.InvalidArgumentError(
            None, None, f"shift and axis must have the same size: {shifts.size} vs "
                        f"{axes.size}")
    for a in axes:
        if not -value.ndim <= a < value.ndim:
            raise errors.InvalidArgumentError(None, None, f"axis {a} is out of range")
    if not axes.size:
        return value.copy()
    return np.roll(value, tuple(int(s) for s in shifts), tuple(int(a) for a in axes))


define_op("Roll", infer=_infer, kernel=_kernel)


@RegisterGradient("Roll")
def _roll_grad(op, grad):
    return [roll(grad, negative(op.inputs[1]), op.inputs[2]), None, None]


def roll(input, shift, axis, name: Optional[str] = None):
    """``input`` with its elements shifted by ``shift`` along ``axis`` (cyclically: those
    shifted past the end come back at the start)."""
    graph = graph_for([t for t in (input, shift, axis) if hasattr(t, "graph")])
    with graph.as_default(), graph.atomic(), graph.name_scope(name or "Roll") as scope:
        value = convert_to_tensor(input, name="input")
        shift = convert_to_tensor(shift, name="shift")
        axis = convert_to_tensor(axis, name="axis")
        for arg, tensor in (("shift", shift), ("axis", axis)):
            if tensor.dtype not in _INDEX_TYPES:
                raise TypeError(f"Value passed to parameter '{arg}' has DataType "
                                f"{tensor.dtype.name} not in list of allowed values: "
                                "int32, int64")
        return graph.create_op("Roll", [value, shift, axis],
                               {"T": value.dtype, "Tshift": shift.dtype,
                                "Taxis": axis.dtype}, scope).outputs[0]
