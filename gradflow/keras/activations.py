"""``tf.keras.activations``: activation functions by name (``activation='relu'``)."""
from __future__ import annotations

from typing import Callable, Optional

from gradflow.framework.constant import constant, convert_to_tensor
from gradflow.framework.graph import Tensor
from gradflow.ops import math as math_ops
from gradflow.ops import nn

__all__ = ["get", "serialize", "linear", "relu", "sigmoid", "softmax", "tanh", "elu", "selu",
           "softplus", "softsign", "exponential", "hard_sigmoid", "swish", "gelu"]


def linear(x) -> Tensor:
    """The identity: what ``activation=None`` means."""
    return x


def relu(x, alpha: float = 0.0, max_value: Optional[float] = None,
         threshold: float = 0.0) -> Tensor:
    """``x`` from ``threshold`` up to ``max_value`` (clipped there), ``alpha * (x -
    threshold)`` below ``threshold``."""
    if alpha == 0.0 and max_value is None and threshold == 0.0:
        return nn.relu(x)
    x = convert_to_tensor(x)
    dtype = x.dtype.base_dtype
    below = nn.relu(math_ops.negative(x) + constant(threshold, dtype=dtype)) if alpha \
        else None
    if threshold:
        x = x * math_ops.cast(math_ops.greater(x, constant(threshold, dtype=dtype)), dtype)
    else:
        x = nn.relu(x)
    if max_value is not None:
        x = math_ops.clip_by_value(x, constant(0.0, dtype=dtype),
                                   constant(max_value, dtype=dtype))
    if alpha:
        x = x - constant(alpha, dtype=dtype) * below
    return x


def softmax(x, axis: int = -1) -> Tensor:
    x = convert_to_tensor(x)
    if x.shape.ndims == 1:
        raise ValueError(f"Cannot apply softmax to a tensor that is 1D. Received input: {x}")
    return nn.softmax(x, axis=axis)


def sigmoid(x) -> Tensor:
    return math_ops.sigmoid(x)


def tanh(x) -> Tensor:
    return math_ops.tanh(x)


def elu(x, alpha: float = 1.0) -> Tensor:
    if alpha == 1.0:
        return nn.elu(x)
    x = convert_to_tensor(x)
    return math_ops.where(math_ops.greater(x, constant(0, dtype=x.dtype)), x,
                          constant(alpha, dtype=x.dtype) * math_ops.expm1(x))


def selu(x) -> Tensor:
    return nn.selu(x)


def softplus(x) -> Tensor:
    return math_ops.softplus(x)


def softsign(x) -> Tensor:
    return math_ops.softsign(x)


def exponential(x) -> Tensor:
    return math_ops.exp(x)


def hard_sigmoid(x) -> Tensor:
    """clip(0.2 * x + 0.5, 0, 1)."""
    x = convert_to_tensor(x)
    return math_ops.clip_by_value(constant(0.2, dtype=x.dtype) * x +
                                  constant(0.5, dtype=x.dtype), 0.0, 1.0)


def swish(x) -> Tensor:
    return nn.silu(x)


def gelu(x, approximate: bool = False) -> Tensor:
    return nn.gelu(x, approximate=approximate)


_BY_NAME = {fn.__name__: fn for fn in (linear, relu, sigmoid, softmax, tanh, elu, selu,
                                       softplus, softsign, exponential, hard_sigmoid, swish,
                                       gelu)}


def get(identifier) -> Callable:
    """The activation ``identifier`` names (None: linear); callables pass through."""
    if identifier is None:
        return linear
    if isinstance(identifier, str):
        if identifier not in _BY_NAME:
            raise ValueError(f"Unknown activation function: {identifier}. Please ensure you "
                             "are using a `keras.utils.custom_object_scope` and that this "
                             "object is included in the scope.")
        return _BY_NAME[identifier]
    if callable(identifier):
        return identifier
    raise TypeError("Could not interpret activation function identifier: "
                    f"{identifier!r}")


def serialize(activation: Callable) -> str:
    return getattr(activation, "__name__", str(activation))
