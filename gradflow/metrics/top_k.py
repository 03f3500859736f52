"""TF1's top-k metrics: precision and recall of the k highest-scored classes against
integer class labels (one or several per example), with TF1's set semantics.

Per example, the predicted classes (top-k ids) and the label ids are sets: the true
positives are their common ids, the false positives the predicted ids not among the
labels, the false negatives the label ids not predicted. With ``class_id``, only that
class is counted. Counts and results are float64, as in TF1; before any example the
result is NaN (0 / 0), as in TF1.
"""
from __future__ import annotations

from typing import Optional

from gradflow.framework import dtypes
from gradflow.framework.constant import convert_to_tensor
from gradflow.framework.graph import Tensor, get_default_graph, name_scope
from gradflow.losses.weights import assert_broadcastable, broadcast_weights
from gradflow.metrics.core import Collections, collect, metric_variable
from gradflow.ops import array, math, nn, state

__all__ = ["precision_at_k", "recall_at_k", "precision_at_top_k", "recall_at_top_k",
           "sparse_precision_at_k", "average_precision_at_k",
           "sparse_average_precision_at_k"]


def _at_k_name(name: str, k: Optional[int], class_id: Optional[int]) -> str:
    name = f"{name}_at_{'k' if k is None else k}"
    if class_id is not None:
        name = f"{name}_class{class_id}"
    return name


def _expanded_labels(labels, predictions_idx: Tensor) -> Tensor:
    """Labels of one rank less than the predicted ids gain a trailing axis."""
    labels = math.cast(convert_to_tensor(labels), dtypes.int64)
    l_rank, p_rank = labels.shape.ndims, predictions_idx.shape.ndims
    if l_rank is not None and p_rank is not None and l_rank == p_rank - 1:
        return array.expand_dims(labels, -1)
    return labels


def _distinct(ids: Tensor) -> Tensor:
    """True at the first occurrence of each id along the last axis."""
    same = math.equal(array.expand_dims(ids, -1), array.expand_dims(ids, -2))
    ones = array.ones_like(math.cast(same, dtypes.float32))
    before = array.matrix_band_part(ones, -1, 0) - array.matrix_band_part(ones, 0, 0)
    repeated = math.reduce_any(math.logical_and(same, math.cast(before, dtypes.bool)), -1)
    return math.logical_not(repeated)


def _member(ids: Tensor, of: Tensor) -> Tensor:
    """Whether each id (last axis) occurs among ``of``'s ids of the same example."""
    return math.reduce_any(math.equal(array.expand_dims(ids, -1), array.expand_dims(of, -2)),
                           -1)


def _as_float64(mask: Tensor) -> Tensor:
    return math.cast(mask, dtypes.float64)


def _set_counts(labels: Tensor, predictions_idx: Tensor, class_id: Optional[int]) -> dict:
    """Per example: |predicted & labels|, |predicted - labels|, |labels - predicted|."""
    if class_id is not None:
        predicted = math.reduce_any(math.equal(predictions_idx, class_id), -1)
        labelled = math.reduce_any(math.equal(labels, class_id), -1)
        return {"tp": _as_float64(math.logical_and(predicted, labelled)),
                "fp": _as_float64(math.logical_and(predicted, math.logical_not(labelled))),
                "fn": _as_float64(math.logical_and(labelled, math.logical_not(predicted)))}
    distinct_predicted = _distinct(predictions_idx)
    tp = math.reduce_sum(_as_float64(math.logical_and(distinct_predicted,
                                                      _member(predictions_idx, labels))), -1)
    predicted = math.reduce_sum(_as_float64(distinct_predicted), -1)
    labelled = math.reduce_sum(_as_float64(_distinct(labels)), -1)
    return {"tp": tp, "fp": predicted - tp, "fn": labelled - tp}


def _streaming_count(key: str, long_name: str, counts: dict, k, class_id, weights):
    """A float64 variable named ``<long_name>_at_<k>`` and the op adding this batch."""
    graph = get_default_graph()
    with graph.name_scope(_at_k_name(long_name, k, class_id)) as scope:
        per_example = counts[key]
        if weights is not None:
            weights = convert_to_tensor(weights)
            assert_broadcastable(weights, per_example)
            per_example = math.multiply(per_example, math.cast(weights, dtypes.float64))
        batch_total = math.cast(math.reduce_sum(per_example), dtypes.float64)
        variable = metric_variable([], dtypes.float64, name=scope)
        return convert_to_tensor(variable), state.assign_add(variable, batch_total,
                                                             name="update")


def _at_top_k(kind: str, labels, predictions_idx, k, class_id, weights, metrics_collections,
              updates_collections, scope: str) -> tuple:
    other, other_name = ("fp", "false_positive") if kind == "precision" else \
        ("fn", "false_negative")
    predictions_idx = convert_to_tensor(predictions_idx)
    labels = _expanded_labels(labels, predictions_idx)
    top_k_idx = math.cast(predictions_idx, dtypes.int64)
    counts = _set_counts(labels, top_k_idx, class_id)
    tp, tp_update = _streaming_count("tp", "true_positive", counts, k, class_id, weights)
    miss, miss_update = _streaming_count(other, other_name, counts, k, class_id, weights)
    value = math.divide(tp, math.add(tp, miss, name="Add"), name=scope)
    update = math.divide(tp_update, math.add(tp_update, miss_update, name="Add"),
                         name="update")
    return collect(value, update, metrics_collections, updates_collections)


def _top_k_metric(kind: str, labels, predictions, k: int, class_id, weights,
                  metrics_collections, updates_collections, name) -> tuple:
    graph = get_default_graph()
    with graph.atomic(), name_scope(name, _at_k_name(kind, k, class_id),
                                    (predictions, labels, weights)) as scope:
        _, top_k_idx = nn.top_k(predictions, k)
        return _at_top_k(kind, labels, top_k_idx, k, class_id, weights, metrics_collections,
                         updates_collections, scope)


def precision_at_k(labels, predictions, k: int, class_id: Optional[int] = None, weights=None,
                   metrics_collections: Collections = None,
                   updates_collections: Collections = None,
                   name: Optional[str] = None) -> tuple:
    """The running precision of the top ``k`` classes of ``predictions`` (scores
    [batch, classes]) against ``labels`` (class ids [batch] or [batch, n])."""
    return _top_k_metric("precision", labels, predictions, k, class_id, weights,
                         metrics_collections, updates_collections, name)


def recall_at_k(labels, predictions, k: int, class_id: Optional[int] = None, weights=None,
                metrics_collections: Collections = None,
                updates_collections: Collections = None,
                name: Optional[str] = None) -> tuple:
    """The running recall of the top ``k`` classes of ``predictions`` against ``labels``."""
    return _top_k_metric("recall", labels, predictions, k, class_id, weights,
                         metrics_collections, updates_collections, name)


def precision_at_top_k(labels, predictions_idx, k: Optional[int] = None,
                       class_id: Optional[int] = None, weights=None,
                       metrics_collections: Collections = None,
                       updates_collections: Collections = None,
                       name: Optional[str] = None) -> tuple:
    """``precision_at_k`` given the predicted class ids ``predictions_idx`` [batch, k]."""
    graph = get_default_graph()
    with graph.atomic(), name_scope(name, _at_k_name("precision", k, class_id),
                                    (predictions_idx, labels, weights)) as scope:
        return _at_top_k("precision", labels, predictions_idx, k, class_id, weights,
                         metrics_collections, updates_collections, scope)


def recall_at_top_k(labels, predictions_idx, k: Optional[int] = None,
                    class_id: Optional[int] = None, weights=None,
                    metrics_collections: Collections = None,
                    updates_collections: Collections = None,
                    name: Optional[str] = None) -> tuple:
    """``recall_at_k`` given the predicted class ids ``predictions_idx`` [batch, k]."""
    graph = get_default_graph()
    with graph.atomic(), name_scope(name, _at_k_name("recall", k, class_id),
                                    (predictions_idx, labels, weights)) as scope:
        return _at_top_k("recall", labels, predictions_idx, k, class_id, weights,
                         metrics_collections, updates_collections, scope)


# TF1's deprecated name of ``precision_at_k``.
sparse_precision_at_k = precision_at_k


def _average_precision(labels, predictions_idx: Tensor) -> Tensor:
    """Per example: the mean over relevant ranks j of precision@j, divided by
    min(k, number of non-negative labels) (TF1's average precision at k)."""
    graph = get_default_graph()
    with graph.name_scope("average_precision") as scope:
        predictions_idx = math.cast(predictions_idx, dtypes.int64, name="predictions_idx")
        if predictions_idx.shape.ndims == 0:
            raise ValueError("The rank of predictions_idx must be at least 1.")
        k = predictions_idx.shape.as_list()[-1] if predictions_idx.shape.ndims else None
        if k is None:
            raise ValueError("The last dimension of predictions_idx must be set. Currently, "
                             "it is None.")
        labels = _expanded_labels(labels, predictions_idx)
        relevant = _as_float64(_member(predictions_idx, labels))
        hits = math.cumsum(relevant, axis=-1, name="tp_per_k")
        ranks = math.cumsum(array.ones_like(relevant), axis=-1, name="retrieved_per_k")
        precisions = math.divide(hits, ranks, name="precision_per_k")
        total = math.reduce_sum(math.multiply(precisions, relevant,
                                              name="relevant_precision_per_k"),
                                axis=(-1,), name="precision_sum")
        with graph.name_scope("num_relevant") as relevant_scope:
            labelled = math.reduce_sum(_as_float64(math.greater_equal(labels, 0)), axis=-1)
            num_relevant = math.minimum(labelled, float(k), name=relevant_scope)
        return math.divide(total, num_relevant, name=scope)


def average_precision_at_k(labels, predictions, k: int, weights=None,
                           metrics_collections: Collections = None,
                           updates_collections: Collections = None,
                           name: Optional[str] = None) -> tuple:
    """The running mean (weighted by example) of the average precision of the top ``k``
    classes of ``predictions`` against ``labels`` (float64)."""
    if k < 1:
        raise ValueError(f"Invalid k={k}. `k` should be >= 1.")
    graph = get_default_graph()
    with graph.atomic(), name_scope(name, _at_k_name("average_precision", k, None),
                                    (predictions, labels, weights)) as scope:
        predictions = convert_to_tensor(predictions)
        labels = math.cast(convert_to_tensor(labels), dtypes.int64)
        # label ids past the last class are no class at all (-1), as in TF1
        num_classes = math.cast(array.shape(predictions)[-1], dtypes.int64)
        too_large = math.greater_equal(labels, num_classes)
        labels = math.select(math.greater_equal(math.reduce_max(labels), num_classes),
                             math.select(too_large, -array.ones_like(labels), labels), labels)
        _, top_k_idx = nn.top_k(predictions, k)
        average = _average_precision(labels, top_k_idx)
        if weights is not None:
            weights = broadcast_weights(math.cast(weights, dtypes.float64), average)
            average = math.multiply(average, weights)
        with graph.name_scope("max") as max_scope:
            max_variable = metric_variable([], dtypes.float64, name=max_scope)
            batch_max = math.cast(array.size(average, name="batch_max"), dtypes.float64) \
                if weights is None else math.reduce_sum(weights, name="batch_max")
            max_update = state.assign_add(max_variable, batch_max, name="update")
        with graph.name_scope("total") as total_scope:
            total_variable = metric_variable([], dtypes.float64, name=total_scope)
            batch_total = math.reduce_sum(average, name="batch_total")
            total_update = state.assign_add(total_variable, batch_total, name="update")
        value = math.div_no_nan(total_variable, max_variable, name="mean")
        update = math.div_no_nan(total_update, max_update, name=scope)
        return collect(value, update, metrics_collections, updates_collections)


# TF1's deprecated name of ``average_precision_at_k``.
sparse_average_precision_at_k = average_precision_at_k
