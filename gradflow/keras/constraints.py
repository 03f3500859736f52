"""``tf.keras.constraints``: projections applied to a weight after each optimizer step
(``Dense(..., kernel_constraint=tf.keras.constraints.MaxNorm(2))``)."""
from __future__ import annotations

from typing import Callable, Optional

from gradflow.framework.constant import constant
from gradflow.framework.graph import Tensor
from gradflow.keras import backend as K
from gradflow.ops import math as math_ops

__all__ = ["Constraint", "MaxNorm", "NonNeg", "UnitNorm", "MinMaxNorm", "max_norm",
           "non_neg", "unit_norm", "min_max_norm", "get"]


class Constraint:
    """The identity; subclasses project ``w``."""

    def __call__(self, w) -> Tensor:
        return w

    def get_config(self) -> dict:
        return {}


def _norms(w, axis) -> Tensor:
    return math_ops.sqrt(math_ops.reduce_sum(math_ops.square(w), axis=axis, keepdims=True))


class MaxNorm(Constraint):
    """Rescales slices along ``axis`` whose L2 norm exceeds ``max_value``."""

    def __init__(self, max_value: float = 2, axis=0):
        self.max_value = float(max_value)
        self.axis = axis

    def __call__(self, w) -> Tensor:
        dtype = w.dtype.base_dtype
        norms = _norms(w, self.axis)
        desired = math_ops.clip_by_value(norms, 0.0, self.max_value)
        return w * (desired / (constant(K.epsilon(), dtype=dtype) + norms))

    def get_config(self) -> dict:
        return {"max_value": self.max_value, "axis": self.axis}


class NonNeg(Constraint):
    """Sets negative entries to zero."""

    def __call__(self, w) -> Tensor:
        return w * math_ops.cast(math_ops.greater_equal(w, constant(0.0, dtype=w.dtype
                                                                    .base_dtype)),
                                 w.dtype.base_dtype)


class UnitNorm(Constraint):
    """Scales slices along ``axis`` to unit L2 norm."""

    def __init__(self, axis=0):
        self.axis = axis

    def __call__(self, w) -> Tensor:
        return w / (constant(K.epsilon(), dtype=w.dtype.base_dtype) + _norms(w, self.axis))

    def get_config(self) -> dict:
        return {"axis": self.axis}


class MinMaxNorm(Constraint):
    """Moves slice norms into [min_value, max_value] by ``rate``."""

    def __init__(self, min_value: float = 0.0, max_value: float = 1.0, rate: float = 1.0,
                 axis=0):
        self.min_value, self.max_value = float(min_value), float(max_value)
        self.rate, self.axis = float(rate), axis

    def __call__(self, w) -> Tensor:
        dtype = w.dtype.base_dtype
        norms = _norms(w, self.axis)
        clipped = math_ops.clip_by_value(norms, self.min_value, self.max_value)
        desired = constant(self.rate, dtype=dtype) * clipped + \
            constant(1 - self.rate, dtype=dtype) * norms
        return w * (desired / (constant(K.epsilon(), dtype=dtype) + norms))

    def get_config(self) -> dict:
        return {"min_value": self.min_value, "max_value": self.max_value, "rate": self.rate,
                "axis": self.axis}


max_norm, non_neg, unit_norm, min_max_norm = MaxNorm, NonNeg, UnitNorm, MinMaxNorm


def get(identifier) -> Optional[Callable]:
    """A constraint from its name ('max_norm', 'non_neg', 'unit_norm'), itself, or None."""
    if identifier is None:
        return None
    if isinstance(identifier, str):
        makers = {"max_norm": MaxNorm, "non_neg": NonNeg, "unit_norm": UnitNorm,
                  "min_max_norm": MinMaxNorm, "MaxNorm": MaxNorm, "NonNeg": NonNeg,
                  "UnitNorm": UnitNorm, "MinMaxNorm": MinMaxNorm}
        if identifier not in makers:
            raise ValueError(f"Unknown constraint: {identifier}")
        return makers[identifier]()
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret constraint identifier: {identifier}")
