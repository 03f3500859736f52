"""Small ops TF1 code reaches for: ``xlog1py``, ``cross`` and ``guarantee_const``.

Each op's constructor, shape function, kernel and gradient sit side by side.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from gradflow.framework.graph import Tensor
from gradflow.framework.registry import RegisterGradient, define_op, gradient_needed
from gradflow.ops import math
from gradflow.ops.common import (TRAINABLE, apply_op, as_tensor, binary_operands,
                                 broadcast_shape, check_dtype_in, same_as_input)

__all__ = ["xlog1py", "cross", "guarantee_const"]


# ------------------------------------------------------------------- xlog1py
def _infer_xlog1py(inputs, attrs):
    x, y = inputs
    return [(x.dtype, broadcast_shape(x.shape, y.shape, lambda: f"{x.name} and {y.name}"))]


def _xlog1py_kernel(x, y):
    with np.errstate(all="ignore"):
        result = np.where(x == 0, 0, x * np.log1p(y))
    return np.asarray(result, dtype=np.result_type(x, y))


define_op("Xlog1py", infer=_infer_xlog1py, kernel=_xlog1py_kernel)


@RegisterGradient("Xlog1py")
def _xlog1py_grad(op, grad):
    """d/dx = log1p(y), d/dy = x / (1 + y); both 0 where x = 0."""
    x, y = op.inputs
    dx = dy = None
    if gradient_needed(x):
        nonzero = math.cast(math.not_equal(x, 0), x.dtype)
        dx = math.reduce_to_shape_of(grad * math.conj(xlog1py(nonzero, y)), x)
    if gradient_needed(y):
        dy = math.reduce_to_shape_of(grad * math.conj(math.xdivy(x, y + 1)), y)
    return dx, dy


def xlog1py(x, y, name: Optional[str] = None) -> Tensor:
    """``x * log1p(y)``, exactly 0 where ``x`` is 0 (even where ``log1p(y)`` is not finite)."""
    x, y = binary_operands(x, y, "Xlog1py")
    check_dtype_in(x, TRAINABLE, "Xlog1py")
    with x.graph.as_default(), x.graph.name_scope(name or "xlog1py"):
        return apply_op("Xlog1py", [x, y], name="Xlog1py")


# --------------------------------------------------------------------- cross
def _infer_cross(inputs, attrs):
    a, b = inputs
    if b.dtype is not a.dtype:
        raise TypeError(f"Input 'b' of 'Cross' Op has type {b.dtype.name} that does not match "
                        f"type {a.dtype.name} of argument 'a'.")
    if not a.shape.is_compatible_with(b.shape):
        raise ValueError(f"Shapes of 'a' and 'b' of 'Cross' must be equal, but are {a.shape} "
                         f"and {b.shape} ({a.name}, {b.name}).")
    shape = a.shape.merge_with(b.shape)
    dims = shape.as_tuple()
    if dims is not None and (not dims or dims[-1] not in (None, 3)):
        last = dims[-1] if dims else "undefined (a scalar)"
        raise ValueError(f"Dimension must be 3 but is {last} for 'Cross' with input shapes: "
                         f"{a.shape}, {b.shape}.")
    return [(a.dtype, shape)]


define_op("Cross", infer=_infer_cross, kernel=lambda a, b: np.cross(a, b).astype(a.dtype))


@RegisterGradient("Cross")
def _cross_grad(op, grad):
    """d(a x b) = da x b + a x db, so the adjoints are b x g and g x a."""
    a, b = op.inputs
    return (cross(b, grad) if gradient_needed(a) else None,
            cross(grad, a) if gradient_needed(b) else None)


def cross(a, b, name: Optional[str] = None) -> Tensor:
    """The cross product of the 3-vectors along the last axis of ``a`` and ``b``."""
    a = as_tensor(a, name="a")
    b = as_tensor(b, dtype=None if isinstance(b, Tensor) else a.dtype, name="b", like=a)
    return apply_op("Cross", [a, b], name=name or "Cross")


# ----------------------------------------------------------- guarantee_const
define_op("GuaranteeConst", infer=same_as_input, kernel=lambda x: x)


@RegisterGradient("GuaranteeConst")
def _guarantee_const_grad(op, grad):
    """TF1 defines no gradient here; asking for one is an error, as there."""
    raise LookupError(f"No gradient defined for operation'{op.name}' (op type: {op.type}). "
                      "In general every operation must have an associated "
                      "`@tf.RegisterGradient` for correct autodiff, which this op is lacking. "
                      "If you want to pretend this operation is a constant in your program, "
                      "you may insert `tf.stop_gradient`.")


def guarantee_const(input, name: Optional[str] = None) -> Tensor:  # noqa: A002 - TF's name
    """``input`` unchanged, promising the runtime it is constant (a hint; nothing is checked)."""
    value = as_tensor(input, name="input")
    return apply_op("GuaranteeConst", [value], name=name or "GuaranteeConst")

