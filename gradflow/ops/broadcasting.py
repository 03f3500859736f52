"""Broadcast shapes: ``broadcast_dynamic_shape`` (TF's ``BroadcastArgs`` op) and
``broadcast_static_shape`` (on ``TensorShape``s, while building)."""
from __future__ import annotations

from typing import Optional

import numpy as np

from gradflow.framework import dtypes, errors
from gradflow.framework.constant import constant_value, convert_to_tensor, register_static_value
from gradflow.framework.graph import Tensor
from gradflow.framework.registry import NotDifferentiable, define_op
from gradflow.framework.tensor_shape import TensorShape
from gradflow.ops.common import apply_op, broadcast_shape, check_dtype_in, constructor

__all__ = ["broadcast_dynamic_shape", "broadcast_static_shape"]


def _infer_broadcast_args(inputs, attrs):
    s0, s1 = inputs
    for t, arg in ((s0, "s0"), (s1, "s1")):
        check_dtype_in(t, (dtypes.int32, dtypes.int64), "BroadcastArgs", arg)
        if t.shape.ndims not in (None, 1):
            raise ValueError(f"Shape must be rank 1 but is rank {t.shape.ndims} for "
                             f"'BroadcastArgs' input '{arg}'.")
    if s1.dtype is not s0.dtype:
        raise TypeError(f"Input 's1' of 'BroadcastArgs' Op has type {s1.dtype.name} that does "
                        f"not match type {s0.dtype.name} of argument 's0'.")
    lengths = [t.shape.as_list()[0] if t.shape.ndims == 1 else None for t in inputs]
    longest = None if None in lengths else max(lengths)
    return [(s0.dtype, TensorShape([longest]))]


def _broadcast_args_kernel(s0, s1):
    try:
        out = np.broadcast_shapes(tuple(int(d) for d in s0), tuple(int(d) for d in s1))
    except ValueError:
        raise errors.InvalidArgumentError(
            None, None, f"Incompatible shapes: [{','.join(str(d) for d in s0)}] vs. "
            f"[{','.join(str(d) for d in s1)}]") from None
    return np.asarray(out, dtype=s0.dtype)


define_op("BroadcastArgs", infer=_infer_broadcast_args, kernel=_broadcast_args_kernel)
NotDifferentiable("BroadcastArgs")


@register_static_value("BroadcastArgs")
def _broadcast_args_value(op) -> Optional[np.ndarray]:
    """Known at build time when both shapes are (so shape inference can use it)."""
    s0, s1 = (constant_value(t) for t in op.inputs)
    if s0 is None or s1 is None:
        return None
    try:
        return _broadcast_args_kernel(s0, s1)
    except errors.InvalidArgumentError:
        return None


@constructor("BroadcastArgs", "shape_x", "shape_y")
def broadcast_dynamic_shape(shape_x, shape_y, name: Optional[str] = None) -> Tensor:
    """The shape two shapes broadcast to, as a 1-D tensor."""
    x = convert_to_tensor(shape_x, name="s0")
    y = convert_to_tensor(shape_y, name="s1", dtype=None if isinstance(shape_y, Tensor)
                          else x.dtype)
    return apply_op("BroadcastArgs", [x, y], name=name or "BroadcastArgs")


def broadcast_static_shape(shape_x: TensorShape, shape_y: TensorShape) -> TensorShape:
    """The ``TensorShape`` two static shapes broadcast to; ValueError if they cannot."""
    try:
        return broadcast_shape(TensorShape(shape_x), TensorShape(shape_y))
    except ValueError:
        raise ValueError(f"Incompatible shapes for broadcasting. Two shapes are compatible "
                         f"if for each dimension pair they are either equal or one of them "
                         f"is 1. Received: {TensorShape(shape_x)} and "
                         f"{TensorShape(shape_y)}.") from None
