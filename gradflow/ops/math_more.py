"""``tf.math`` odds and ends TF1 programs use: ``nextafter`` (``NextAfter``),
``polyval`` (Horner's scheme from public ops), ``cumulative_logsumexp``
(``CumulativeLogsumexp``, a stable running log-sum-exp) and ``sparse_matmul``
(``SparseMatMul``: a matrix product whose sparsity flags are hints)."""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from gradflow.framework import dtypes, errors
from gradflow.framework.constant import convert_to_tensor
from gradflow.framework.graph import Tensor, name_scope
from gradflow.framework.tensor_shape import TensorShape
from gradflow.framework.registry import RegisterGradient, define_op, gradient_needed
from gradflow.ops import math as math_ops
from gradflow.ops.array import ones_like
from gradflow.ops.common import (apply_op, as_tensor, binary_operands, broadcast_shape,
                                 check_dtype_in, constructor, static_ints)
from gradflow.ops.primitives import zeros_like

__all__ = ["nextafter", "polyval", "cumulative_logsumexp", "sparse_matmul"]

_FLOATS = (dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64)


# ------------------------------------------------------------------ nextafter
def _infer_nextafter(inputs, attrs):
    x1, x2 = inputs
    check_dtype_in(x1, (dtypes.float32, dtypes.float64), "NextAfter", "x1")
    return [(x1.dtype, broadcast_shape(x1.shape, x2.shape, "'NextAfter'"))]


define_op("NextAfter", infer=_infer_nextafter, kernel=lambda x1, x2: np.nextafter(x1, x2))


@RegisterGradient("NextAfter")
def _nextafter_grad(op, grad):
    """The result moves with ``x1`` (slope 1) and not with ``x2``, as TF takes it."""
    x1, x2 = op.inputs
    return (math_ops.reduce_to_shape_of(grad, x1) if gradient_needed(x1) else None,
            math_ops.reduce_to_shape_of(grad * 0, x2) if gradient_needed(x2) else None)


@constructor("NextAfter", "x1", "x2")
def nextafter(x1, x2, name: Optional[str] = None) -> Tensor:
    """The next representable value after ``x1`` in the direction of ``x2``."""
    a, b = binary_operands(x1, x2, "NextAfter", ("x1", "x2"))
    return apply_op("NextAfter", [a, b], name=name or "NextAfter")


# -------------------------------------------------------------------- polyval
def polyval(coeffs: Sequence, x, name: Optional[str] = None) -> Tensor:
    """``coeffs[0] * x**(n-1) + ... + coeffs[n-1]`` by Horner's scheme (0 when empty)."""
    if isinstance(coeffs, Tensor) or not isinstance(coeffs, (list, tuple)):
        raise ValueError(f"Argument coeffs must be list type found {type(coeffs)}.")
    with name_scope(name, "polyval", list(coeffs) + [x]):
        x = convert_to_tensor(x, name="x")
        if not coeffs:
            return zeros_like(x)
        terms = [as_tensor(c, dtype=x.dtype, name=f"coeff_{i}") for i, c in enumerate(coeffs)]
        result = terms[0]
        for term in terms[1:]:
            result = term + result * x
        return result


# --------------------------------------------------------- CumulativeLogsumexp
def _infer_cumulative(inputs, attrs):
    x, axis = inputs
    check_dtype_in(x, _FLOATS, "CumulativeLogsumexp", "x")
    check_dtype_in(axis, (dtypes.int32, dtypes.int64), "CumulativeLogsumexp", "axis")
    if axis.shape.ndims not in (None, 0):
        raise ValueError(f"Shape must be rank 0 but is rank {axis.shape.ndims} for "
                         "'CumulativeLogsumexp' input 'axis'.")
    known = static_ints(axis)
    if known is not None and x.shape.ndims is not None and \
            not -x.shape.ndims <= known[0] < max(x.shape.ndims, 1):
        raise ValueError(f"axis {known[0]} is out of range for a tensor of rank "
                         f"{x.shape.ndims} ('CumulativeLogsumexp')")
    return [(x.dtype, x.shape)]


def _cumulative_kernel(x, axis, *, exclusive, reverse):
    axis = int(axis)
    if not -max(x.ndim, 1) <= axis < max(x.ndim, 1):
        raise errors.InvalidArgumentError(None, None, f"axis {axis} is out of range")
    wide = np.moveaxis(x.astype(np.float64), axis, 0)
    if reverse:
        wide = wide[::-1]
    if exclusive:
        wide = np.concatenate([np.full((1,) + wide.shape[1:], -np.inf), wide[:-1]])
    with np.errstate(invalid="ignore"):
        out = np.logaddexp.accumulate(wide, axis=0) if len(wide) else wide
    if reverse:
        out = out[::-1]
    return np.moveaxis(out, 0, axis).astype(x.dtype)


define_op("CumulativeLogsumexp", infer=_infer_cumulative, kernel=_cumulative_kernel)


@RegisterGradient("CumulativeLogsumexp")
def _cumulative_grad(op, grad):
    """d out_i / d x_j = exp(x_j - out_i) over the outputs reading x_j: a running
    log-sum-exp the other way, of the positive and the negative parts of the gradient
    separately (TF's stable form)."""
    x, axis = op.inputs
    out = op.outputs[0]
    exclusive, reverse = op.get_attr("exclusive"), op.get_attr("reverse")
    lowest = math_ops.cast(np.finfo(x.dtype.as_numpy_dtype).min, grad.dtype)
    safe = math_ops.select_v2(math_ops.equal(grad, 0), ones_like(grad),
                              math_ops.abs(grad))
    log_positive = math_ops.select_v2(math_ops.greater(grad, 0), math_ops.log(safe), lowest)
    log_negative = math_ops.select_v2(math_ops.less(grad, 0), math_ops.log(safe), lowest)
    positive = math_ops.exp(cumulative_logsumexp(log_positive - out, axis, exclusive,
                                                 not reverse) + x)
    negative = math_ops.exp(cumulative_logsumexp(log_negative - out, axis, exclusive,
                                                 not reverse) + x)
    return positive - negative, None


@constructor("CumulativeLogsumexp", "x", "axis")
def cumulative_logsumexp(x, axis=0, exclusive: bool = False, reverse: bool = False,
                         name: Optional[str] = None) -> Tensor:
    """``log(cumsum(exp(x)))`` along ``axis`` without overflow (``exclusive``: each
    position leaves itself out; ``reverse``: from the end)."""
    x = convert_to_tensor(x, name="x")
    axis = as_tensor(axis, name="axis", dtype=None if isinstance(axis, Tensor)
                     else dtypes.int32, like=x)
    return apply_op("CumulativeLogsumexp", [x, axis], name=name or "CumulativeLogsumexp",
                    exclusive=bool(exclusive), reverse=bool(reverse))


# --------------------------------------------------------------- SparseMatMul
def _infer_sparse_matmul(inputs, attrs):
    a, b = inputs
    for t, arg in ((a, "a"), (b, "b")):
        check_dtype_in(t, (dtypes.float32, dtypes.bfloat16), "SparseMatMul", arg)
        if t.shape.ndims not in (None, 2):
            raise ValueError(f"Shape must be rank 2 but is rank {t.shape.ndims} for "
                             f"'SparseMatMul' input '{arg}'.")
    rows = a.shape.as_list()[1 if attrs["transpose_a"] else 0] if a.shape.ndims == 2 else None
    columns = b.shape.as_list()[0 if attrs["transpose_b"] else 1] \
        if b.shape.ndims == 2 else None
    inner = [t.shape.as_list()[i] for t, i in ((a, 0 if attrs["transpose_a"] else 1),
                                               (b, 1 if attrs["transpose_b"] else 0))
             if t.shape.ndims == 2]
    if len(inner) == 2 and None not in inner and inner[0] != inner[1]:
        raise ValueError(f"Dimensions must be equal, but are {inner[0]} and {inner[1]} for "
                         f"'SparseMatMul' with input shapes: {a.shape}, {b.shape}.")
    return [(dtypes.float32, TensorShape([rows, columns]))]


def _sparse_matmul_kernel(a, b, *, transpose_a, transpose_b, a_is_sparse, b_is_sparse):
    left = a.T if transpose_a else a
    right = b.T if transpose_b else b
    return np.matmul(left.astype(np.float32), right.astype(np.float32))


define_op("SparseMatMul", infer=_infer_sparse_matmul, kernel=_sparse_matmul_kernel)


@RegisterGradient("SparseMatMul")
def _sparse_matmul_grad(op, grad):
    """The gradients of a dense product (the sparsity flags change no value)."""
    a, b = op.inputs
    t_a, t_b = op.get_attr("transpose_a"), op.get_attr("transpose_b")
    grad_a = (math_ops.matmul(b, grad, transpose_a=t_b, transpose_b=True) if t_a else
              math_ops.matmul(grad, b, transpose_b=not t_b))
    grad_b = (math_ops.matmul(grad, a, transpose_a=True, transpose_b=t_a) if t_b else
              math_ops.matmul(a, grad, transpose_a=not t_a))
    return (math_ops.cast(grad_a, a.dtype) if gradient_needed(a) else None,
            math_ops.cast(grad_b, b.dtype) if gradient_needed(b) else None)


@constructor("SparseMatMul", "a", "b")
def sparse_matmul(a, b, transpose_a: bool = False, transpose_b: bool = False,
                  a_is_sparse: bool = False, b_is_sparse: bool = False,
                  name: Optional[str] = None) -> Tensor:
    """``matmul(a, b)`` of float32 (or bfloat16) matrices, always float32; the
    ``*_is_sparse`` flags are TF's speed hints and change no value."""
    x = convert_to_tensor(a, name="a")
    y = as_tensor(b, name="b", dtype=None if isinstance(b, Tensor) else x.dtype, like=x)
    return apply_op("SparseMatMul", [x, y], name=name or "SparseMatMul",
                    transpose_a=bool(transpose_a), transpose_b=bool(transpose_b),
                    a_is_sparse=bool(a_is_sparse), b_is_sparse=bool(b_is_sparse))
