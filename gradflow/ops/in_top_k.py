"""``nn.in_top_k``: whether each row's target class is among its ``k`` highest predictions.

The ``InTopKV2`` primitive under TF's type name: ``predictions`` ``[batch, classes]``
(float32), ``targets`` ``[batch]`` and a scalar ``k`` (int32 or int64). As in TF, classes
tied with the k-th score all count as in the top k, and a row whose target is out of
range or whose predictions are not all finite gives False. It has no gradient.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from gradflow.framework import dtypes
from gradflow.framework.constant import convert_to_tensor
from gradflow.framework.registry import NotDifferentiable, define_op
from gradflow.framework.tensor_shape import TensorShape
from gradflow.ops.common import as_tensor, graph_for

__all__ = ["in_top_k"]

_INDEX_TYPES = (dtypes.int32, dtypes.int64)


def _infer(inputs, attrs):
    predictions, targets, k = (t.shape for t in inputs)
    for shape, rank in ((predictions, 2), (targets, 1), (k, 0)):
        if shape.ndims is not None and shape.ndims != rank:
            raise ValueError(f"Shape must be rank {rank} but is rank {shape.ndims} for "
                             f"'InTopKV2' with input shapes: {predictions}, {targets}, {k}.")
    predictions = predictions.with_rank(2)
    targets = targets.with_rank(1)
    batch = predictions[0]
    if batch.value is not None and targets[0].value is not None and \
            batch.value != targets[0].value:
        raise ValueError(f"Dimensions must be equal, but are {batch.value} and "
                         f"{targets[0].value} for 'InTopKV2' with input shapes: "
                         f"{predictions}, {targets}, {k}.")
    return [(dtypes.bool, TensorShape([batch.value if batch.value is not None
                                       else targets[0].value]))]


def _kernel(predictions, targets, k, **_):
    predictions = np.asarray(predictions)
    targets = np.asarray(targets).astype(np.int64)
    rows, classes = predictions.shape
    valid = (targets >= 0) & (targets < classes)
    scores = predictions[np.arange(rows), np.where(valid, targets, 0)]
    above = (predictions > scores[:, None]).sum(axis=1)
    finite = np.isfinite(predictions).all(axis=1)
    return valid & finite & (above < int(k))


define_op("InTopKV2", infer=_infer, kernel=_kernel)
NotDifferentiable("InTopKV2")


def in_top_k(predictions, targets, k, name: Optional[str] = None):
    """A bool ``[batch]``: is ``targets[i]`` among the ``k`` largest of
    ``predictions[i]`` (ties with the k-th score included)?"""
    graph = graph_for([t for t in (predictions, targets, k) if hasattr(t, "graph")])
    # TF's layout: the op and its converted inputs in a scope of the op's own name,
    # inside the ``in_top_k`` (or ``name``) scope: ``in_top_k/InTopKV2/k``.
    with graph.as_default(), graph.atomic(), graph.name_scope(name or "in_top_k"), \
            graph.name_scope(name or "InTopKV2") as scope:
        predictions = convert_to_tensor(predictions, dtype=dtypes.float32, name="predictions")
        targets = convert_to_tensor(targets, name="targets")
        if targets.dtype not in _INDEX_TYPES:
            raise TypeError(f"Value passed to parameter 'targets' has DataType "
                            f"{targets.dtype.name} not in list of allowed values: int32, int64")
        k = as_tensor(k, dtype=None if hasattr(k, "dtype") else targets.dtype, name="k",
                      like=predictions)
        if k.dtype != targets.dtype:
            raise TypeError(f"Input 'k' of 'InTopKV2' Op has type {k.dtype.name} that does "
                            f"not match type {targets.dtype.name} of argument 'targets'.")
        return graph.create_op("InTopKV2", [predictions, targets, k], {"T": targets.dtype},
                               scope).outputs[0]
