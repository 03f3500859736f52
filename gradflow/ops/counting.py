"""Counting for evaluation code: ``confusion_matrix`` (TF1's ``tf.confusion_matrix`` /
``tf.math.confusion_matrix``) and ``bincount`` (the ``DenseBincount`` op).

``confusion_matrix`` is TF's composition: labels and predictions as int64, checked
non-negative (and below ``num_classes`` when given) by asserts with TF's messages, then a
``ScatterNd`` of the weights (ones by default) at ``[label, prediction]`` into
``[num_classes, num_classes]``; without ``num_classes`` the size is one more than the
largest label or prediction. ``bincount`` counts (or sums ``weights`` at) each value of
a non-negative int32 array, over ``max(arr) + 1`` bins clipped to ``[minlength,
maxlength]``. Neither has a gradient.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from gradflow.framework import dtypes, errors
from gradflow.framework.constant import constant_value, convert_to_tensor
from gradflow.framework.graph import control_dependencies, get_default_graph
from gradflow.framework.registry import NotDifferentiable, define_op
from gradflow.framework.tensor_shape import TensorShape
from gradflow.ops.array import ones_like, reshape, scatter_nd, stack
from gradflow.ops.common import static_ints
from gradflow.ops.logging_ops import assert_less, assert_non_negative
from gradflow.ops.math import cast, maximum, minimum, reduce_max

__all__ = ["confusion_matrix", "bincount"]


def _check_same_shape(a: TensorShape, b: TensorShape) -> None:
    if a.ndims is None or b.ndims is None:
        return
    dims_a, dims_b = a.as_list(), b.as_list()
    if len(dims_a) != len(dims_b):
        raise ValueError(f"Shapes {a} and {b} must have the same rank")
    for i, (x, y) in enumerate(zip(dims_a, dims_b, strict=True)):
        if x is not None and y is not None and x != y:
            raise ValueError(f"Dimension {i} in both shapes must be equal, but are {x} and {y}. "
                             f"Shapes are {_dims(dims_a)} and {_dims(dims_b)}.")


def _dims(dims: list) -> str:
    return "[" + ",".join("?" if d is None else str(d) for d in dims) + "]"


def confusion_matrix(labels, predictions, num_classes=None, dtype=dtypes.int32,
                     name: Optional[str] = None, weights=None):
    """``[num_classes, num_classes]`` counts (or summed ``weights``) of each
    ``(label, prediction)`` pair: rows are labels, columns predictions."""
    graph = get_default_graph()
    dtype = dtypes.as_dtype(dtype)
    with graph.atomic(), graph.name_scope(name or "confusion_matrix"):
        labels = convert_to_tensor(labels, name="labels")
        predictions = convert_to_tensor(predictions, name="predictions")
        label_values, prediction_values = constant_value(labels), constant_value(predictions)
        labels, predictions = cast(labels, dtypes.int64), cast(predictions, dtypes.int64)
        _check_same_shape(labels.shape, predictions.shape)
        checks = [assert_non_negative(labels, message="`labels` contains negative values"),
                  assert_non_negative(predictions,
                                      message="`predictions` contains negative values")]
        static_size = None
        if num_classes is None:
            if label_values is not None and prediction_values is not None:
                static_size = int(max(np.max(label_values, initial=-1),
                                      np.max(prediction_values, initial=-1))) + 1
            num_classes = maximum(reduce_max(predictions), reduce_max(labels)) + 1
        else:
            static = static_ints(convert_to_tensor(num_classes)) \
                if not isinstance(num_classes, int) else [num_classes]
            static_size = static[0] if static else None
            num_classes = cast(num_classes, dtypes.int64)
            checks += [assert_less(labels, num_classes, message="`labels` out of bound"),
                       assert_less(predictions, num_classes,
                                   message="`predictions` out of bound")]
        values = ones_like(predictions, dtype=dtype) if weights is None \
            else cast(convert_to_tensor(weights, name="weights"), dtype)
        with control_dependencies(checks):
            indices = stack([labels, predictions], axis=1)
        result = scatter_nd(indices, values, stack([num_classes, num_classes]))
        result.set_shape([static_size, static_size])
        return result


def _infer_bincount(inputs, attrs):
    size = static_ints(inputs[1])
    return [(attrs["T"], TensorShape([size[0] if size else None]))]


def _bincount_kernel(arr, size, weights, *, T, **_):
    arr = np.asarray(arr).reshape(-1)
    if (arr < 0).any():
        raise errors.InvalidArgumentError(None, None, "Input arr must be non-negative!")
    size = int(size)
    weights = np.asarray(weights).reshape(-1)
    keep = arr < size
    counts = np.bincount(arr[keep], weights=weights[keep] if weights.size else None,
                         minlength=size)[:size]
    return counts.astype(T.as_numpy_dtype)


define_op("DenseBincount", infer=_infer_bincount, kernel=_bincount_kernel)
NotDifferentiable("DenseBincount")


def bincount(arr, weights=None, minlength=None, maxlength=None, dtype=dtypes.int32):
    """How many times each value ``0..`` occurs in the int32 ``arr`` (or the sum of the
    ``weights`` where it occurs): ``max(arr) + 1`` bins, at least ``minlength`` and at
    most ``maxlength``."""
    graph = get_default_graph()
    with graph.atomic(), graph.name_scope("bincount"):
        arr = convert_to_tensor(arr, name="arr", dtype=dtypes.int32)
        values = constant_value(arr)
        static_bounds = all(b is None or isinstance(b, int) for b in (minlength, maxlength))
        known = None
        if values is not None and static_bounds:
            known = int(values.max()) + 1 if values.size else 0
        if known is not None:
            known = max(known, minlength or 0)
            known = known if maxlength is None else min(known, int(maxlength))
            size = convert_to_tensor(known, dtype=dtypes.int32, name="size")
        else:
            size = reduce_max(arr) + 1
            if minlength is not None:
                size = maximum(size, cast(minlength, dtypes.int32))
            if maxlength is not None:
                size = minimum(size, cast(maxlength, dtypes.int32))
        if weights is None:
            dtype = dtypes.as_dtype(dtype)
            weights = convert_to_tensor(np.zeros([0], dtype.as_numpy_dtype), name="Const")
        else:
            weights = convert_to_tensor(weights, name="weights")
            dtype = weights.dtype
        return graph.create_op("DenseBincount", [reshape(arr, [-1]), size, weights],
                               {"T": dtype, "Tidx": dtypes.int32, "binary_output": False},
                               name="DenseBincount").outputs[0]
