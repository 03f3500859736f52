"""Values of the variant dtype (loop histories, TensorArrays) in gradient sums.

A variant has no numeric zero: "no gradient" is the run-time value None, and sums of
variant gradients skip it. ``zeros_like_any`` and ``add_gradients`` make zeros and sums
for gradients of any dtype (used by the loop and TensorArray gradients and by autodiff).
"""
from __future__ import annotations

from typing import Sequence

from gradflow.framework import dtypes
from gradflow.framework.graph import Tensor
from gradflow.framework.registry import NotDifferentiable, RegisterGradient, define_op
from gradflow.framework.tensor_shape import TensorShape
from gradflow.ops import array, math
from gradflow.ops.common import apply_op

__all__ = ["zeros_like_any", "add_gradients"]

define_op("ZerosLikeVariant", infer=lambda inputs, attrs: [(dtypes.variant, TensorShape([]))],
          kernel=lambda x: None)
NotDifferentiable("ZerosLikeVariant")


def _add_variants_kernel(*values):
    present = [v for v in values if v is not None]
    if not present:
        return None
    total = present[0]
    for v in present[1:]:
        total = total + v
    return total


define_op("AddVariants", infer=lambda inputs, attrs: [(dtypes.variant, TensorShape([]))],
          kernel=_add_variants_kernel)


@RegisterGradient("AddVariants")
def _add_variants_grad(op, grad):
    return [grad] * len(op.inputs)


def zeros_like_any(t: Tensor) -> Tensor:
    """A zero gradient for ``t``: zeros for numbers, the null value for variants."""
    if t.dtype is dtypes.variant:
        return apply_op("ZerosLikeVariant", [t], name="zeros_like")
    if _is_variable_ref(t):  # its run-time value is a reference, not numbers
        if t.shape.is_fully_defined():
            return array.zeros(t.shape.as_list(), dtype=t.dtype, name="zeros_like")
        t = apply_op("ReadVariableOp", [t], name="read")
    return array.zeros_like(t)


def _is_variable_ref(t: Tensor) -> bool:
    """A variable's reference tensor, or a function's placeholder standing for one."""
    while t.op.type != "VariableV2":
        sources = getattr(t.graph, "capture_sources", None)
        if not sources or t not in sources:
            return False
        t = sources[t]
    return True


def add_gradients(terms: Sequence[Tensor]) -> Tensor:
    """Sums gradient terms of any dtype (variants included)."""
    if terms[0].dtype is dtypes.variant:
        return apply_op("AddVariants", list(terms), name="add_variants")
    return math.add_n(list(terms))
