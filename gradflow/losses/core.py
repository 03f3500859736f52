"""Reductions, ``compute_weighted_loss`` and the loss collections of TF1's ``tf.losses``.

Every loss in ``gf.losses`` ends in ``compute_weighted_loss``: the elementwise losses are
cast to float32 (as TF1 does, whatever the input dtype), scaled by the weights, reduced
as ``reduction`` says, cast back to the losses' dtype and added to ``loss_collection``.
"""
from __future__ import annotations

from typing import Optional

from gradflow.framework import dtypes
from gradflow.framework.constant import constant, convert_to_tensor
from gradflow.framework.graph import GraphKeys, Tensor, get_default_graph, name_scope
from gradflow.losses.weights import assert_broadcastable, broadcast_weights, to_float32
from gradflow.ops import array, math

__all__ = ["Reduction", "compute_weighted_loss", "add_loss", "get_losses",
           "get_regularization_loss", "get_regularization_losses", "get_total_loss"]


class Reduction:
    """How a weighted loss tensor is reduced to the returned loss (TF1's keys)."""

    NONE = "none"
    SUM = "weighted_sum"
    SUM_OVER_BATCH_SIZE = "weighted_sum_over_batch_size"
    MEAN = "weighted_mean"
    SUM_BY_NONZERO_WEIGHTS = "weighted_sum_by_nonzero_weights"
    SUM_OVER_NONZERO_WEIGHTS = SUM_BY_NONZERO_WEIGHTS

    @classmethod
    def all(cls) -> tuple:
        """Every key, in TF1's order (the nonzero-weights key twice, under both names)."""
        return (cls.NONE, cls.SUM, cls.MEAN, cls.SUM_OVER_BATCH_SIZE,
                cls.SUM_OVER_NONZERO_WEIGHTS, cls.SUM_BY_NONZERO_WEIGHTS)

    @classmethod
    def validate(cls, key) -> None:
        """Raises ValueError unless ``key`` is one of :meth:`all`."""
        if key not in cls.all():
            raise ValueError(f"Invalid Reduction Key {key}. Key should be one of "
                             f"{cls.all()}.")


def _num_elements(losses: Tensor) -> Tensor:
    """The number of elements of ``losses``, in its dtype (scope ``num_elements``)."""
    graph = get_default_graph()
    with graph.name_scope("num_elements") as scope:
        return math.cast(array.size(losses, name=scope), losses.dtype)


def num_present(losses: Tensor, weights: Tensor, per_batch: bool = False) -> Tensor:
    """How many loss elements carry a nonzero weight (per batch row: keepdims sums)."""
    graph = get_default_graph()
    with graph.name_scope("num_present") as scope:
        weights = math.cast(weights, dtypes.float32)
        present = math.select(math.equal(weights, 0.0), array.zeros_like(weights),
                              array.ones_like(weights))
        present = broadcast_weights(present, losses)
        if per_batch:
            axes = math.range(1, array.rank(present))
            return math.reduce_sum(present, axis=axes, keepdims=True, name=scope)
        return math.reduce_sum(present, name=scope)


def _safe_mean(total: Tensor, count: Tensor) -> Tensor:
    return math.div_no_nan(math.reduce_sum(total), count, name="value")


def _reduce(losses: Tensor, weights: Tensor, reduction: str) -> Tensor:
    weighted = math.multiply(losses, weights, name="Mul")
    if reduction == Reduction.NONE:
        return weighted
    loss = math.reduce_sum(weighted)
    if reduction == Reduction.MEAN:
        return _safe_mean(loss, math.reduce_sum(array.ones_like(losses) * weights))
    if reduction == Reduction.SUM_BY_NONZERO_WEIGHTS:
        return _safe_mean(loss, num_present(losses, weights))
    if reduction == Reduction.SUM_OVER_BATCH_SIZE:
        return _safe_mean(loss, _num_elements(losses))
    return loss


def weighted_loss(losses, weights, loss_collection, reduction: str) -> Tensor:
    """``compute_weighted_loss``'s work in the current name scope (no scope of its own)."""
    losses = convert_to_tensor(losses)
    input_dtype = losses.dtype
    losses = to_float32(losses)
    weights = to_float32(weights)
    assert_broadcastable(weights, losses)
    loss = math.cast(_reduce(losses, weights, reduction), input_dtype)
    add_loss(loss, loss_collection)
    return loss


def compute_weighted_loss(losses, weights=1.0, scope: Optional[str] = None,
                          loss_collection: Optional[str] = GraphKeys.LOSSES,
                          reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS) -> Tensor:
    """``losses`` scaled by ``weights`` and reduced; added to ``loss_collection``.

    ``weights`` is a scalar or broadcasts to ``losses`` by TF1's rule (same rank, each
    dimension 1 or the losses' size); the result has the losses' dtype.
    """
    Reduction.validate(reduction)
    graph = get_default_graph()
    with graph.atomic(), name_scope(scope, "weighted_loss", (losses, weights)):
        return weighted_loss(losses, weights, loss_collection, reduction)


def add_loss(loss, loss_collection: Optional[str] = GraphKeys.LOSSES) -> None:
    """Adds ``loss`` to ``loss_collection`` (nothing when the collection is None or '')."""
    if loss_collection:
        get_default_graph().add_to_collection(loss_collection, loss)


def get_losses(scope: Optional[str] = None,
               loss_collection: str = GraphKeys.LOSSES) -> list:
    """The losses in ``loss_collection`` whose names match ``scope``."""
    return get_default_graph().get_collection(loss_collection, scope)


def get_regularization_losses(scope: Optional[str] = None) -> list:
    """The tensors of ``REGULARIZATION_LOSSES`` whose names match ``scope``."""
    return get_default_graph().get_collection(GraphKeys.REGULARIZATION_LOSSES, scope)


def get_regularization_loss(scope: Optional[str] = None,
                            name: str = "total_regularization_loss") -> Tensor:
    """The sum of the regularization losses (the constant 0.0 when there are none)."""
    losses = get_regularization_losses(scope)
    graph = get_default_graph()
    with graph.atomic():
        if losses:
            return math.add_n(losses, name=name)
        return constant(0.0)


def get_total_loss(add_regularization_losses: bool = True, name: str = "total_loss",
                   scope: Optional[str] = None) -> Tensor:
    """The sum of the losses (and regularization losses) whose names match ``scope``.

    Raises ValueError when there is nothing to add, as TF1's ``add_n`` does.
    """
    losses = get_losses(scope=scope)
    if add_regularization_losses:
        losses += get_regularization_losses(scope=scope)
    if not losses:
        raise ValueError("Inputs must be an iterable of at least one Tensor/IndexedSlices "
                         "with the same dtype and shape.")
    graph = get_default_graph()
    with graph.atomic():
        return math.add_n(losses, name=name)
