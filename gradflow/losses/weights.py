"""Weights against values: TF1's broadcast rules, shared by ``gf.losses`` and ``gf.metrics``.

TF1 lets a weight tensor scale a loss or metric tensor when it is a scalar or has the
values' rank with each dimension either 1 or the values' size. Other shapes raise
ValueError at build time. Squeezable dimensions (a trailing 1 that only one side has) are
removed first, as TF1's losses and metrics do.
"""
from __future__ import annotations

import numpy as np

from gradflow.framework import dtypes
from gradflow.framework.constant import convert_to_tensor
from gradflow.framework.graph import Tensor, get_default_graph
from gradflow.framework.tensor_shape import TensorShape
from gradflow.ops import array, math

__all__ = ["to_float32", "assert_broadcastable", "broadcast_weights",
           "remove_squeezable_dimensions", "squeeze_weights_like"]


def to_float32(value, name: str = "Cast") -> Tensor:
    """``value`` as float32 (TF1's ``cast``: a tensor already float32 is returned as is).

    A Python or NumPy value becomes the constant ``Cast/x`` first, as in TF1, so later op
    names (``Cast_1``...) follow TF1's numbering.
    """
    if isinstance(value, Tensor):
        return math.cast(value, dtypes.float32, name=name)
    graph = get_default_graph()
    with graph.name_scope(name) as scope:
        x = convert_to_tensor(value, name="x")
        return math.cast(x, dtypes.float32, name=scope) if x.dtype is not dtypes.float32 else x


def _shape_text(shape: TensorShape) -> str:
    return "(" + ", ".join("None" if d is None else str(d) for d in shape.as_list()) + \
        ("," if shape.ndims == 1 else "") + ")"


def assert_broadcastable(weights: Tensor, values: Tensor) -> None:
    """Raises TF1's ValueError when ``weights`` cannot scale ``values`` (static shapes).

    A scalar always fits; otherwise both ranks must match and each weights dimension be 1
    or the values' size. Shapes unknown at build time are not checked (gradflow has no
    run-time assertion op): the product then follows NumPy's broadcasting.
    """
    w_shape, v_shape = weights.shape, values.shape
    if w_shape.ndims == 0 or w_shape.ndims is None or v_shape.ndims is None:
        return
    received = f" Received weights={weights}, values={values}"
    if w_shape.ndims != v_shape.ndims:
        raise ValueError(f"weights can not be broadcast to values. values.rank="
                         f"{v_shape.ndims}. weights.rank={w_shape.ndims}. values.shape="
                         f"{_shape_text(v_shape)}. weights.shape={_shape_text(w_shape)}."
                         + received)
    for axis, (w_dim, v_dim) in enumerate(zip(w_shape.as_list(), v_shape.as_list(),
                                              strict=True)):
        if w_dim is not None and v_dim is not None and w_dim not in (1, v_dim):
            raise ValueError(f"weights can not be broadcast to values. Mismatch at dim "
                             f"{axis}. values.shape={np.asarray(v_shape.as_list())}, "
                             f"weights.shape={np.asarray(w_shape.as_list())}." + received)


def broadcast_weights(weights, values: Tensor) -> Tensor:
    """``weights`` broadcast to the shape of ``values`` (scope ``broadcast_weights``)."""
    graph = get_default_graph()
    with graph.name_scope("broadcast_weights") as scope:
        values = convert_to_tensor(values, name="values")
        weights = convert_to_tensor(weights, dtype=values.dtype, name="weights")
        if (weights.shape.is_fully_defined() and values.shape.is_fully_defined()
                and weights.shape.is_compatible_with(values.shape)):
            return weights
        assert_broadcastable(weights, values)
        return math.multiply(weights, array.ones_like(values), name=scope)


def _last_dim_is_one(t: Tensor) -> bool:
    return t.shape.as_list()[-1] in (1, None)


def remove_squeezable_dimensions(labels: Tensor, predictions: Tensor,
                                 expected_rank_diff: int = 0) -> tuple[Tensor, Tensor]:
    """Squeezes a trailing size-1 axis of whichever side has one rank too many.

    ``expected_rank_diff`` is rank(predictions) - rank(labels) when nothing is to be
    squeezed (1 for class scores against class ids). Needs static ranks; unknown ranks
    are left as they are.
    """
    p_rank, l_rank = predictions.shape.ndims, labels.shape.ndims
    if p_rank is None or l_rank is None:
        return labels, predictions
    graph = get_default_graph()
    with graph.name_scope("remove_squeezable_dimensions"):
        diff = p_rank - l_rank
        if diff == expected_rank_diff + 1 and _last_dim_is_one(predictions):
            predictions = array.squeeze(predictions, [-1], name="Squeeze")
        elif diff == expected_rank_diff - 1 and _last_dim_is_one(labels):
            labels = array.squeeze(labels, [-1], name="Squeeze")
    return labels, predictions


def squeeze_weights_like(weights, like: Tensor, expand: bool = False) -> Tensor:
    """``weights`` with a trailing axis squeezed when it has one rank more than ``like``.

    With ``expand`` (TF1's metrics), a weights tensor one rank short gains a trailing axis.
    """
    weights = convert_to_tensor(weights)
    w_rank, rank = weights.shape.ndims, like.shape.ndims
    if w_rank in (0, None) or rank is None:
        return weights
    if w_rank - rank == 1:
        return array.squeeze(weights, [-1])
    if expand and rank - w_rank == 1:
        return array.expand_dims(weights, -1)
    return weights

