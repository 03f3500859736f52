"""``tf.keras.regularizers``: L1, L2 and L1L2 weight penalties (``kernel_regularizer='l2'``)."""
from __future__ import annotations

from typing import Callable, Optional

from gradflow.framework.constant import constant, convert_to_tensor
from gradflow.framework.graph import Tensor
from gradflow.ops import math as math_ops

__all__ = ["Regularizer", "L1L2", "L1", "L2", "l1", "l2", "l1_l2", "get"]


class Regularizer:
    """A callable mapping a weight to a scalar penalty (this base: no penalty)."""

    def __call__(self, x) -> Tensor:
        return constant(0.0, dtype=convert_to_tensor(x).dtype.base_dtype)

    def get_config(self) -> dict:
        return {}


class L1L2(Regularizer):
    """``l1 * sum(|x|) + l2 * sum(x ** 2)``."""

    def __init__(self, l1: float = 0.0, l2: float = 0.0):
        self.l1 = float(l1)
        self.l2 = float(l2)

    def __call__(self, x) -> Tensor:
        x = convert_to_tensor(x)
        dtype = x.dtype.base_dtype
        penalty = constant(0.0, dtype=dtype)
        if self.l1:
            penalty = penalty + constant(self.l1, dtype=dtype) * \
                math_ops.reduce_sum(math_ops.abs(x))
        if self.l2:
            penalty = penalty + constant(self.l2, dtype=dtype) * \
                math_ops.reduce_sum(math_ops.square(x))
        return penalty

    def get_config(self) -> dict:
        return {"l1": self.l1, "l2": self.l2}


class L1(L1L2):
    def __init__(self, l1: float = 0.01):
        super().__init__(l1=l1)


class L2(L1L2):
    def __init__(self, l2: float = 0.01):
        super().__init__(l2=l2)


def l1(l1: float = 0.01) -> L1L2:
    return L1L2(l1=l1)


def l2(l2: float = 0.01) -> L1L2:
    return L1L2(l2=l2)


def l1_l2(l1: float = 0.01, l2: float = 0.01) -> L1L2:
    return L1L2(l1=l1, l2=l2)


def get(identifier) -> Optional[Callable]:
    """A regularizer from its name ('l1', 'l2', 'l1_l2'), itself, or None."""
    if identifier is None:
        return None
    if isinstance(identifier, str):
        makers = {"l1": L1, "l2": L2, "l1_l2": l1_l2, "L1": L1, "L2": L2}
        if identifier not in makers:
            raise ValueError(f"Unknown regularizer: {identifier}")
        return makers[identifier]()
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret regularizer identifier: {identifier}")
