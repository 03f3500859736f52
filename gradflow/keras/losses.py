"""``tf.keras.losses``: per-example loss functions (mean over the last axis where keras
takes it), their class forms (averaged over the batch), and ``get`` for ``compile``."""
from __future__ import annotations

from typing import Callable

from gradflow.framework.constant import convert_to_tensor
from gradflow.framework.graph import Tensor
from gradflow.keras import backend as K
from gradflow.ops import math as math_ops

__all__ = ["mean_squared_error", "mean_absolute_error", "categorical_crossentropy",
           "sparse_categorical_crossentropy", "binary_crossentropy", "mse", "mae", "MSE",
           "MAE", "Loss", "MeanSquaredError", "MeanAbsoluteError", "CategoricalCrossentropy",
           "SparseCategoricalCrossentropy", "BinaryCrossentropy", "get"]


def _pair(y_true, y_pred) -> tuple:
    y_pred = convert_to_tensor(y_pred)
    y_true = math_ops.cast(convert_to_tensor(y_true), y_pred.dtype.base_dtype)
    return y_true, y_pred


def mean_squared_error(y_true, y_pred) -> Tensor:
    """mean((y_pred - y_true) ** 2) over the last axis."""
    y_true, y_pred = _pair(y_true, y_pred)
    return math_ops.reduce_mean(math_ops.squared_difference(y_pred, y_true), axis=-1)


def mean_absolute_error(y_true, y_pred) -> Tensor:
    """mean(|y_pred - y_true|) over the last axis."""
    y_true, y_pred = _pair(y_true, y_pred)
    return math_ops.reduce_mean(math_ops.abs(y_pred - y_true), axis=-1)


def categorical_crossentropy(y_true, y_pred, from_logits: bool = False,
                             label_smoothing: float = 0.0) -> Tensor:
    """Cross-entropy against one-hot ``y_true`` (probabilities, or logits)."""
    if label_smoothing:
        raise ValueError(f"categorical_crossentropy: label_smoothing={label_smoothing} is "
                         "not supported")
    y_true, y_pred = _pair(y_true, y_pred)
    return K.categorical_crossentropy(y_true, y_pred, from_logits=from_logits)


def sparse_categorical_crossentropy(y_true, y_pred, from_logits: bool = False,
                                    axis: int = -1) -> Tensor:
    """Cross-entropy against integer class ids ``y_true``."""
    return K.sparse_categorical_crossentropy(y_true, y_pred, from_logits=from_logits,
                                             axis=axis)


def binary_crossentropy(y_true, y_pred, from_logits: bool = False,
                        label_smoothing: float = 0.0) -> Tensor:
    """Binary cross-entropy, averaged over the last axis."""
    if label_smoothing:
        raise ValueError(f"binary_crossentropy: label_smoothing={label_smoothing} is not "
                         "supported")
    y_true, y_pred = _pair(y_true, y_pred)
    return math_ops.reduce_mean(K.binary_crossentropy(y_true, y_pred, from_logits=from_logits),
                                axis=-1)


mse = MSE = mean_squared_error
mae = MAE = mean_absolute_error


class Loss:
    """A loss object: ``loss(y_true, y_pred)`` is the batch mean of its function."""

    def __init__(self, fn: Callable, name: str, **kwargs):
        reduction = kwargs.pop("reduction", "auto")
        if reduction not in ("auto", "sum_over_batch_size"):
            raise ValueError(f"{type(self).__name__}: reduction={reduction!r} is not "
                             "supported")
        self.fn = fn
        self.name = name
        self._fn_kwargs = kwargs

    def call(self, y_true, y_pred) -> Tensor:
        """The per-example losses."""
        return self.fn(y_true, y_pred, **self._fn_kwargs)

    def __call__(self, y_true, y_pred, sample_weight=None) -> Tensor:
        if sample_weight is not None:
            raise ValueError(f"{type(self).__name__}: sample_weight is not supported")
        return math_ops.reduce_mean(self.call(y_true, y_pred))


class MeanSquaredError(Loss):
    def __init__(self, reduction: str = "auto", name: str = "mean_squared_error"):
        super().__init__(mean_squared_error, name, reduction=reduction)


class MeanAbsoluteError(Loss):
    def __init__(self, reduction: str = "auto", name: str = "mean_absolute_error"):
        super().__init__(mean_absolute_error, name, reduction=reduction)


class CategoricalCrossentropy(Loss):
    def __init__(self, from_logits: bool = False, label_smoothing: float = 0.0,
                 reduction: str = "auto", name: str = "categorical_crossentropy"):
        super().__init__(categorical_crossentropy, name, reduction=reduction,
                         from_logits=from_logits, label_smoothing=label_smoothing)


class SparseCategoricalCrossentropy(Loss):
    def __init__(self, from_logits: bool = False, reduction: str = "auto",
                 name: str = "sparse_categorical_crossentropy"):
        super().__init__(sparse_categorical_crossentropy, name, reduction=reduction,
                         from_logits=from_logits)


class BinaryCrossentropy(Loss):
    def __init__(self, from_logits: bool = False, label_smoothing: float = 0.0,
                 reduction: str = "auto", name: str = "binary_crossentropy"):
        super().__init__(binary_crossentropy, name, reduction=reduction,
                         from_logits=from_logits, label_smoothing=label_smoothing)


_BY_NAME = {fn.__name__: fn for fn in (mean_squared_error, mean_absolute_error,
                                       categorical_crossentropy,
                                       sparse_categorical_crossentropy, binary_crossentropy)}
_BY_NAME.update({"mse": mse, "mae": mae, "MSE": mse, "MAE": mae})


def get(identifier) -> Callable:
    """The per-example loss function a name or loss object stands for."""
    if isinstance(identifier, str):
        if identifier not in _BY_NAME:
            raise ValueError(f"Unknown loss function: {identifier}. Please ensure this object "
                             "is passed to the `custom_objects` argument.")
        return _BY_NAME[identifier]
    if isinstance(identifier, Loss):
        return identifier.call
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret loss function identifier: {identifier}")
