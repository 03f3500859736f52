"""Casts TF1 programs call besides ``cast``: ``saturate_cast`` and the ``to_complex64``,
``to_complex128`` and ``to_bfloat16`` shorthands (TF1's deprecated ``to_*`` family)."""
from __future__ import annotations

from typing import Optional

import numpy as np

from gradflow.framework import dtypes
from gradflow.framework.constant import convert_to_tensor
from gradflow.framework.graph import Tensor, name_scope
from gradflow.framework.registry import RegisterGradient, define_op, gradient_needed
from gradflow.ops.common import apply_op, broadcast_shape, constructor
from gradflow.ops.math import (cast, greater, less, logical_or, real, reduce_to_shape_of,
                               where)
from gradflow.ops.primitives import zeros_like

__all__ = ["saturate_cast", "to_complex64", "to_complex128", "to_bfloat16"]


def _limits(dtype: dtypes.DType) -> tuple:
    numpy_type = dtype.real_dtype.as_numpy_dtype
    info = np.finfo(numpy_type) if dtype.is_floating or dtype.is_complex else \
        np.iinfo(numpy_type)
    return info.min, info.max


def _bound_in(source: dtypes.DType, bound, target: dtypes.DType, upper: bool):
    """``bound`` (a limit of ``target``) as the nearest ``source`` value that still casts
    inside ``target``: float32 cannot hold int32's max, and 2**31 would overflow."""
    numpy_type = source.real_dtype.as_numpy_dtype
    value = numpy_type(bound)
    if not (source.is_floating or source.is_complex):
        return value
    exact = float(value) if not (target.is_floating or target.is_complex) else None
    if exact is not None and (exact > bound if upper else exact < bound):
        value = np.nextafter(value, numpy_type(-np.inf if upper else np.inf))
    return value


# ------------------------------------------------------------- ClipByValue
def _infer_clip(inputs, attrs):
    t, low, high = inputs
    for bound in (low, high):
        if bound.dtype is not t.dtype:
            raise TypeError(f"Input '{bound.name}' of 'ClipByValue' Op has type "
                            f"{bound.dtype.name} that does not match type {t.dtype.name} of "
                            "argument 't'.")
        shape = broadcast_shape(t.shape, bound.shape, "ClipByValue")
        if not shape.is_compatible_with(t.shape):
            raise ValueError(f"clip_value_min and clip_value_max must be scalars or shaped "
                             f"like t, got {bound.shape} for t of shape {t.shape}")
    return [(t.dtype, t.shape)]


define_op("ClipByValue", infer=_infer_clip,
          kernel=lambda t, low, high: np.minimum(np.maximum(t, low), high).astype(t.dtype))


@RegisterGradient("ClipByValue")
def _clip_grad(op, grad):
    """The gradient passes where ``t`` was inside the bounds, else to the bound used."""
    t, low, high = op.inputs
    below, above = less(t, low), greater(t, high)
    zeros = zeros_like(grad)
    return (where(logical_or(below, above), zeros, grad) if gradient_needed(t) else None,
            reduce_to_shape_of(where(below, grad, zeros), low) if gradient_needed(low)
            else None,
            reduce_to_shape_of(where(above, grad, zeros), high) if gradient_needed(high)
            else None)


@constructor("saturate_cast", "value", single_op=False)
def saturate_cast(value, dtype, name: Optional[str] = None) -> Tensor:
    """``value`` cast to ``dtype`` after clipping it to the range ``dtype`` can hold (a
    plain cast of 300.0 to uint8 wraps around; this gives 255). Complex to real keeps
    the real part."""
    target = dtypes.as_dtype(dtype)
    with name_scope(name, "saturate_cast", [value]) as scope:
        value = convert_to_tensor(value, name="value")
        source = value.dtype
        if source.is_complex and not target.is_complex:
            value = real(value)
            source = value.dtype
        low_in, high_in = _limits(source)
        low_out, high_out = _limits(target)
        # Floats are clamped even into their own type, as in TF: infinities become the
        # largest finite values.
        if low_in < low_out or high_in > high_out or source.is_floating:
            low = convert_to_tensor(_bound_in(source, max(low_in, low_out), target, False),
                                    dtype=source)
            high = convert_to_tensor(_bound_in(source, min(high_in, high_out), target, True),
                                     dtype=source)
            value = apply_op("ClipByValue", [value, low, high], name="clamp")
        if source is target:
            return value
        return cast(value, target, name=scope)


@constructor("ToComplex64", "x", single_op=False)
def to_complex64(x, name: str = "ToComplex64") -> Tensor:
    """``cast(x, complex64)`` (TF1's deprecated shorthand)."""
    return cast(x, dtypes.complex64, name=name)


@constructor("ToComplex128", "x", single_op=False)
def to_complex128(x, name: str = "ToComplex128") -> Tensor:
    """``cast(x, complex128)`` (TF1's deprecated shorthand)."""
    return cast(x, dtypes.complex128, name=name)


@constructor("ToBFloat16", "x", single_op=False)
def to_bfloat16(x, name: str = "ToBFloat16") -> Tensor:
    """``cast(x, bfloat16)`` (TF1's deprecated shorthand)."""
    return cast(x, dtypes.bfloat16, name=name)
