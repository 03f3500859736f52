"""Counting ops: ``bincount`` (TF's ``DenseBincount``) and ``confusion_matrix`` (a
``ScatterNd`` of ones, or of ``weights``, at (label, prediction) pairs)."""
from __future__ import annotations

from typing import Optional

import numpy as np

from gradflow.framework import dtypes, errors
from gradflow.framework.constant import constant_value, convert_to_tensor
from gradflow.framework.graph import Tensor, control_dependencies, name_scope
from gradflow.framework.registry import NotDifferentiable, define_op
from gradflow.framework.tensor_shape import TensorShape, equal_shapes_message
from gradflow.ops import array
from gradflow.ops import math as math_ops
from gradflow.ops.array.indexing import scatter_nd
from gradflow.ops.common import apply_op, check_dtype_in, constructor, static_ints
from gradflow.ops.logging_ops import assert_less, assert_non_negative

__all__ = ["bincount", "confusion_matrix"]

_COUNTED = (dtypes.int32, dtypes.int64, dtypes.float32, dtypes.float64)


# --------------------------------------------------------------- DenseBincount
def _infer_bincount(inputs, attrs):
    arr, size, weights = inputs
    check_dtype_in(arr, (dtypes.int32, dtypes.int64), "DenseBincount", "input")
    check_dtype_in(weights, _COUNTED, "DenseBincount", "weights")
    if size.shape.ndims not in (None, 0):
        raise ValueError(f"Shape must be rank 0 but is rank {size.shape.ndims} for "
                         "'DenseBincount' input 'size'.")
    count = static_ints(size)
    bins = None if count is None else count[0]
    if arr.shape.ndims == 2:
        return [(weights.dtype, TensorShape([arr.shape.as_list()[0], bins]))]
    return [(weights.dtype, TensorShape([bins]))]


def _bincount_kernel(arr, size, weights, *, binary_output, **_):
    if arr.size and arr.min() < 0:
        raise errors.InvalidArgumentError(None, None, "Input arr must be non-negative!")
    bins = int(size)
    if bins < 0:
        raise errors.InvalidArgumentError(None, None,
                                          f"size ({bins}) must be non-negative")
    rows = arr.reshape(-1, arr.shape[-1]) if arr.ndim == 2 else arr.reshape(1, -1)
    flat_weights = None if weights.size == 0 else weights.reshape(rows.shape)
    out = np.zeros((rows.shape[0], bins), dtype=weights.dtype)
    for r, row in enumerate(rows):
        keep = row < bins
        values = 1 if flat_weights is None or binary_output else flat_weights[r][keep]
        if binary_output:
            out[r, row[keep]] = 1
        else:
            np.add.at(out[r], row[keep], values)
    return out if arr.ndim == 2 else out[0]


define_op("DenseBincount", infer=_infer_bincount, kernel=_bincount_kernel)
NotDifferentiable("DenseBincount")


@constructor("bincount", "arr", "weights", single_op=False)
def bincount(arr, weights=None, minlength=None, maxlength=None, dtype=dtypes.int32,
             name: Optional[str] = None, axis=None, binary_output: bool = False) -> Tensor:
    """How often each value in ``arr`` occurs (summing ``weights`` instead of ones, if
    given): ``max(arr) + 1`` bins, at least ``minlength`` and at most ``maxlength``."""
    if axis not in (None, 0, -1):
        raise ValueError(f"bincount: axis={axis!r} is not supported (only None, 0 or -1)")
    with name_scope(name, "bincount", [arr, weights, minlength, maxlength]):
        values = convert_to_tensor(arr, name="arr")
        if values.dtype not in (dtypes.int32, dtypes.int64):
            values = math_ops.cast(values, dtypes.int32)
        known = constant_value(values)
        limits = [constant_value(v) if v is not None else None for v in (minlength, maxlength)]
        if known is not None and all(v is not None or given is None for v, given in
                                     zip(limits, (minlength, maxlength), strict=True)):
            # All known while building: the bin count is a constant, so the output
            # shape is static (TF's shape function folds the same computation).
            bins = int(known.max()) + 1 if known.size else 0
            if limits[0] is not None:
                bins = max(int(limits[0]), bins)
            if limits[1] is not None:
                bins = min(int(limits[1]), bins)
            size = convert_to_tensor(np.asarray(bins, values.dtype.as_numpy_dtype),
                                     name="size")
        else:
            nonempty = math_ops.cast(math_ops.greater(array.size(values), 0), values.dtype)
            size = nonempty * (math_ops.reduce_max(values) + 1)
            if minlength is not None:
                size = math_ops.maximum(convert_to_tensor(minlength, name="minlength",
                                                          dtype=values.dtype), size)
            if maxlength is not None:
                size = math_ops.minimum(convert_to_tensor(maxlength, name="maxlength",
                                                          dtype=values.dtype), size)
        if axis is None:
            values = array.reshape(values, [-1])
        if weights is None:
            weights = convert_to_tensor(np.zeros(0, dtypes.as_dtype(dtype).as_numpy_dtype))
        else:
            weights = convert_to_tensor(weights, name="weights")
            if axis is None:
                weights = array.reshape(weights, [-1])
        return apply_op("DenseBincount", [values, size, weights], name="DenseBincount",
                        binary_output=bool(binary_output))


# ------------------------------------------------------------- confusion_matrix
@constructor("confusion_matrix", "labels", "predictions", "weights", single_op=False)
def confusion_matrix(labels, predictions, num_classes=None, dtype=dtypes.int32,
                     name: Optional[str] = None, weights=None) -> Tensor:
    """``[num_classes, num_classes]`` counts (or summed ``weights``) of each (label,
    prediction) pair; run-time checks that the classes are in range."""
    with name_scope(name, "confusion_matrix", [predictions, labels, num_classes, weights]):
        labels = convert_to_tensor(labels, name="labels")
        predictions = convert_to_tensor(predictions, name="predictions")
        known = [constant_value(labels), constant_value(predictions)]
        labels = math_ops.cast(labels, dtypes.int64)
        predictions = math_ops.cast(predictions, dtypes.int64)
        if not labels.shape.is_compatible_with(predictions.shape):
            raise ValueError(equal_shapes_message(labels.shape, predictions.shape))
        checks = [assert_non_negative(labels, message="`labels` contains negative values"),
                  assert_non_negative(predictions,
                                      message="`predictions` contains negative values")]
        with control_dependencies(checks):
            labels = array.identity(labels, name="control_dependency")
            predictions = array.identity(predictions, name="control_dependency_1")
        if num_classes is None and all(k is not None and k.size for k in known):
            # known while building: a static [n, n] result, as TF's constant folding gives
            num_classes = convert_to_tensor(
                np.int64(max(int(k.max()) for k in known) + 1), name="num_classes")
        elif num_classes is None:
            num_classes = math_ops.maximum(math_ops.reduce_max(predictions),
                                           math_ops.reduce_max(labels)) + 1
        else:
            num_classes = convert_to_tensor(num_classes, name="num_classes", dtype=None if
                                            isinstance(num_classes, Tensor) else dtypes.int64)
            if num_classes.dtype is not dtypes.int64:
                num_classes = math_ops.cast(num_classes, dtypes.int64)
            bounds = [assert_less(labels, num_classes, message="`labels` out of bound"),
                      assert_less(predictions, num_classes,
                                  message="`predictions` out of bound")]
            with control_dependencies(bounds):
                labels = array.identity(labels)
                predictions = array.identity(predictions)
        indices = array.stack([labels, predictions], axis=1)
        if weights is None:
            values = array.ones_like(predictions, dtype=dtype)
        else:
            values = math_ops.cast(convert_to_tensor(weights, name="weights"), dtype)
        shape = array.stack([num_classes, num_classes])
        return scatter_nd(indices, values, shape)
