"""``tf.keras.metrics``: per-example metric functions (accuracies, errors) and ``get``,
which ``compile`` uses to turn ``metrics=['accuracy']`` into the accuracy that fits the
loss, as keras does."""
from __future__ import annotations

from typing import Callable

from gradflow.framework import dtypes
from gradflow.framework.constant import constant, convert_to_tensor
from gradflow.framework.graph import Tensor
from gradflow.keras import losses
from gradflow.ops import array
from gradflow.ops import math as math_ops

__all__ = ["binary_accuracy", "categorical_accuracy", "sparse_categorical_accuracy",
           "mean_squared_error", "mean_absolute_error", "mse", "mae", "get", "resolve"]

mean_squared_error = mse = losses.mean_squared_error
mean_absolute_error = mae = losses.mean_absolute_error


def binary_accuracy(y_true, y_pred, threshold: float = 0.5) -> Tensor:
    """The fraction of the last axis where ``y_pred > threshold`` matches ``y_true``."""
    y_pred = convert_to_tensor(y_pred)
    dtype = y_pred.dtype.base_dtype
    y_true = math_ops.cast(convert_to_tensor(y_true), dtype)
    hits = math_ops.cast(math_ops.greater(y_pred, constant(threshold, dtype=dtype)), dtype)
    return math_ops.reduce_mean(math_ops.cast(math_ops.equal(y_true, hits), dtype), axis=-1)


def categorical_accuracy(y_true, y_pred) -> Tensor:
    """1 where the arg-max of ``y_pred`` is the one-hot class of ``y_true``, else 0."""
    y_pred = convert_to_tensor(y_pred)
    return math_ops.cast(math_ops.equal(math_ops.argmax(y_true, -1),
                                        math_ops.argmax(y_pred, -1)), dtypes.float32)


def sparse_categorical_accuracy(y_true, y_pred) -> Tensor:
    """1 where the arg-max of ``y_pred`` is the integer class ``y_true``, else 0."""
    y_pred = convert_to_tensor(y_pred)
    y_true = convert_to_tensor(y_true)
    if y_true.shape.ndims is not None and y_pred.shape.ndims is not None and \
            y_true.shape.ndims == y_pred.shape.ndims:
        y_true = array.squeeze(y_true, [-1])
    predicted = math_ops.cast(math_ops.argmax(y_pred, -1), y_true.dtype.base_dtype)
    return math_ops.cast(math_ops.equal(y_true, predicted), dtypes.float32)


_BY_NAME = {fn.__name__: fn for fn in (binary_accuracy, categorical_accuracy,
                                       sparse_categorical_accuracy)}
_BY_NAME.update({"mse": mse, "mae": mae, "mean_squared_error": mse,
                 "mean_absolute_error": mae})


def get(identifier) -> Callable:
    """The metric function a name stands for (callables pass through)."""
    if isinstance(identifier, str):
        if identifier not in _BY_NAME:
            raise ValueError(f"Unknown metric function: {identifier}. Please ensure this "
                             "object is passed to the `custom_objects` argument.")
        return _BY_NAME[identifier]
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret metric function identifier: {identifier}")


def resolve(identifier, loss_fn: Callable, output_shape) -> tuple[str, Callable]:
    """(history name, function) of one ``compile`` metric: 'accuracy'/'acc' becomes
    'acc' with the accuracy matching the loss and output shape."""
    if identifier in ("accuracy", "acc"):
        last = output_shape[-1] if output_shape else None
        if loss_fn is losses.binary_crossentropy or last == 1:
            return "acc", binary_accuracy
        if loss_fn is losses.sparse_categorical_crossentropy:
            return "acc", sparse_categorical_accuracy
        return "acc", categorical_accuracy
    fn = get(identifier)
    return fn.__name__, fn
