"""TF1's threshold metrics: confusion counts at thresholds, AUC (ROC and PR), precision
and recall at thresholds, sensitivity at a specificity and the reverse.

Predictions are scores in [0, 1]; a prediction counts as positive at threshold t when
it is greater than t. The counts are float32 vectors with one entry per threshold.
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from gradflow.framework import dtypes
from gradflow.framework.constant import constant, convert_to_tensor
from gradflow.framework.graph import Tensor, get_default_graph, name_scope
from gradflow.losses.weights import broadcast_weights, to_float32
from gradflow.metrics.core import Collections, collect, metric_variable, squeezed
from gradflow.ops import array, math, state

__all__ = ["auc", "precision_at_thresholds", "recall_at_thresholds",
           "true_positives_at_thresholds", "false_positives_at_thresholds",
           "true_negatives_at_thresholds", "false_negatives_at_thresholds",
           "sensitivity_at_specificity", "specificity_at_sensitivity"]

_ALL = ("tp", "fn", "tn", "fp")
_NAMES = {"tp": "true_positives", "fn": "false_negatives", "tn": "true_negatives",
          "fp": "false_positives"}
_EPSILON = 1e-7
_SUMMATIONS = ("trapezoidal", "careful_interpolation", "minoring", "majoring")


def _confusion_at_thresholds(labels, predictions, thresholds: Sequence[float], weights,
                             includes: Sequence[str] = _ALL) -> tuple[dict, dict]:
    """Variables and update ops of the requested counts (tp, fn, tn, fp) per threshold."""
    predictions, labels, weights = squeezed(to_float32(convert_to_tensor(predictions)),
                                            math.cast(labels, dtypes.bool), weights)
    count = len(thresholds)
    scores = array.reshape(predictions, [1, -1])
    # [thresholds, 1] against [1, examples]: every (threshold, example) pair
    cuts = array.reshape(constant(np.asarray(thresholds, dtype=np.float32)), [count, 1])
    pred_is_pos = math.greater(scores, cuts)
    label_is_pos = array.reshape(labels, [1, -1])
    pred_is_neg = math.logical_not(pred_is_pos)
    label_is_neg = math.logical_not(label_is_pos)
    conditions = {"tp": (label_is_pos, pred_is_pos), "fn": (label_is_pos, pred_is_neg),
                  "tn": (label_is_neg, pred_is_neg), "fp": (label_is_neg, pred_is_pos)}
    row_weights = None
    if weights is not None:
        row_weights = array.reshape(broadcast_weights(to_float32(weights), predictions),
                                    [1, -1])
    values, updates = {}, {}
    for key in _ALL:
        if key not in includes:
            continue
        variable = metric_variable([count], dtypes.float32, name=_NAMES[key])
        hits = math.cast(math.logical_and(*conditions[key]), dtypes.float32)
        if row_weights is not None:
            hits = hits * row_weights
        updates[key] = state.assign_add(variable, math.reduce_sum(hits, 1))
        values[key] = convert_to_tensor(variable)
    return values, updates


def _check_auc_arguments(curve: str, summation_method: str) -> None:
    if curve not in ("ROC", "PR"):
        raise ValueError(f"Curve must be either ROC or PR. Curve {curve} is unknown.")
    if summation_method not in _SUMMATIONS:
        raise ValueError(f"Invalid summation_method: {summation_method} summation_method "
                         f"should be 'trapezoidal', 'careful_interpolation', 'minoring', or "
                         f"'majoring'.")


def _auc_thresholds(num_thresholds: int, thresholds) -> list[float]:
    """The cut points: given ones (sorted) or evenly spaced ones, with ends just outside
    [0, 1] so that every score falls between the first and the last."""
    if thresholds is not None:
        inner = sorted(thresholds)
    else:
        inner = [(i + 1) * 1.0 / (num_thresholds - 1) for i in range(num_thresholds - 2)]
    return [0.0 - _EPSILON] + inner + [1.0 + _EPSILON]


def _interpolated_pr_auc(tp: Tensor, fp: Tensor, fn: Tensor, n: int, name: str) -> Tensor:
    """PR AUC by interpolating precision between thresholds (Davis & Goadrich, 2006)."""
    dtp = tp[:n - 1] - tp[1:]
    p = tp + fp
    slope = math.div_no_nan(dtp, math.maximum(p[:n - 1] - p[1:], 0.0), name="prec_slope")
    intercept = tp[1:] - math.multiply(slope, p[1:])
    ratio = math.select(math.logical_and(p[:n - 1] > 0.0, p[1:] > 0.0),
                        math.div_no_nan(p[:n - 1], math.maximum(p[1:], 0.0),
                                        name="recall_relative_ratio"),
                        array.ones_like(p[1:]))
    increments = math.div_no_nan(slope * (dtp + intercept * math.log(ratio)),
                                 math.maximum(tp[1:] + fn[1:], 0.0), name="pr_auc_increment")
    return math.reduce_sum(increments, name=name)


def _area(counts: dict, n: int, curve: str, summation_method: str, name: str) -> Tensor:
    tp, fn, tn, fp = (counts[key] for key in _ALL)
    if curve == "PR" and summation_method == "careful_interpolation":
        return _interpolated_pr_auc(tp, fp, fn, n, "interpolate_pr_auc")
    epsilon = 1.0e-6
    recall_ = math.divide(tp + epsilon, tp + fn + epsilon)
    if curve == "ROC":
        x, y = math.divide(fp, fp + tn + epsilon), recall_
    else:
        x, y = recall_, math.divide(tp + epsilon, tp + fp + epsilon)
    widths = x[:n - 1] - x[1:]
    if summation_method == "minoring":
        heights = math.minimum(y[:n - 1], y[1:])
    elif summation_method == "majoring":
        heights = math.maximum(y[:n - 1], y[1:])
    else:
        heights = (y[:n - 1] + y[1:]) / 2.0
    return math.reduce_sum(math.multiply(widths, heights), name=name)


def auc(labels, predictions, weights=None, num_thresholds: int = 200,
        metrics_collections: Collections = None, updates_collections: Collections = None,
        curve: str = "ROC", name: Optional[str] = None,
        summation_method: str = "trapezoidal", thresholds=None) -> tuple:
    """The running area under the ROC or precision-recall curve, from confusion counts
    at ``num_thresholds`` cut points (or the given ``thresholds``).

    ``summation_method``: 'trapezoidal', 'careful_interpolation' (PR: interpolated
    precision; ROC: trapezoidal), 'minoring' or 'majoring' (lower/upper Riemann sums).
    """
    _check_auc_arguments(curve, summation_method)
    graph = get_default_graph()
    with graph.atomic(), name_scope(name, "auc", (labels, predictions, weights)):
        cuts = _auc_thresholds(num_thresholds, thresholds)
        n = len(cuts)
        values, updates = _confusion_at_thresholds(labels, predictions, cuts, weights)
        return collect(_area(values, n, curve, summation_method, "value"),
                       _area(updates, n, curve, summation_method, "update_op"),
                       metrics_collections, updates_collections)


def _ratio_at_thresholds(default_name: str, other: str, labels, predictions, thresholds,
                         weights, metrics_collections, updates_collections, name) -> tuple:
    """tp / (epsilon + tp + other) at each threshold."""
    graph = get_default_graph()
    with graph.atomic(), name_scope(name, default_name, (predictions, labels, weights)):
        values, updates = _confusion_at_thresholds(labels, predictions, thresholds, weights,
                                                   includes=("tp", other))
        prefix = default_name.split("_")[0]

        def ratio(counts, suffix):
            return math.divide(counts["tp"], _EPSILON + counts["tp"] + counts[other],
                               name=f"{prefix}_{suffix}")
        return collect(ratio(values, "value"), ratio(updates, "update_op"),
                       metrics_collections, updates_collections)


def precision_at_thresholds(labels, predictions, thresholds: Sequence[float], weights=None,
                            metrics_collections: Collections = None,
                            updates_collections: Collections = None,
                            name: Optional[str] = None) -> tuple:
    """The running precision at each of ``thresholds`` (a float32 vector)."""
    return _ratio_at_thresholds("precision_at_thresholds", "fp", labels, predictions,
                                thresholds, weights, metrics_collections, updates_collections,
                                name)


def recall_at_thresholds(labels, predictions, thresholds: Sequence[float], weights=None,
                         metrics_collections: Collections = None,
                         updates_collections: Collections = None,
                         name: Optional[str] = None) -> tuple:
    """The running recall at each of ``thresholds`` (a float32 vector)."""
    return _ratio_at_thresholds("recall_at_thresholds", "fn", labels, predictions,
                                thresholds, weights, metrics_collections, updates_collections,
                                name)


def _count_at_thresholds(key: str, labels, predictions, thresholds, weights,
                         metrics_collections, updates_collections, name) -> tuple:
    graph = get_default_graph()
    with graph.atomic(), name_scope(name, _NAMES[key], (predictions, labels, weights)):
        values, updates = _confusion_at_thresholds(labels, predictions, thresholds, weights,
                                                   includes=(key,))
        return collect(array.identity(values[key]), updates[key], metrics_collections,
                       updates_collections)


def _count_at_thresholds_metric(key: str, doc: str):
    """The public per-threshold count ``<_NAMES[key]>_at_thresholds`` (one body for all
    four confusion-matrix cells)."""
    def metric(labels, predictions, thresholds: Sequence[float], weights=None,
               metrics_collections: Collections = None,
               updates_collections: Collections = None, name: Optional[str] = None) -> tuple:
        return _count_at_thresholds(key, labels, predictions, thresholds, weights,
                                    metrics_collections, updates_collections, name)
    metric.__name__ = metric.__qualname__ = f"{_NAMES[key]}_at_thresholds"
    metric.__doc__ = doc
    return metric


true_positives_at_thresholds = _count_at_thresholds_metric(
    "tp", "The running (weighted) true-positive count at each threshold.")
false_positives_at_thresholds = _count_at_thresholds_metric(
    "fp", "The running (weighted) false-positive count at each threshold.")
true_negatives_at_thresholds = _count_at_thresholds_metric(
    "tn", "The running (weighted) true-negative count at each threshold.")
false_negatives_at_thresholds = _count_at_thresholds_metric(
    "fn", "The running (weighted) false-negative count at each threshold.")


def _rate_at_rate(default_name: str, labels, predictions, weights,
                  num_thresholds: int, metrics_collections, updates_collections, name,
                  pick) -> tuple:
    graph = get_default_graph()
    with graph.atomic(), name_scope(name, default_name, (predictions, labels, weights)):
        cuts = _auc_thresholds(num_thresholds, None)
        values, updates = _confusion_at_thresholds(labels, predictions, cuts, weights)
        return collect(pick(values, "value"), pick(updates, "update_op"),
                       metrics_collections, updates_collections)


def sensitivity_at_specificity(labels, predictions, specificity: float, weights=None,
                               num_thresholds: int = 200,
                               metrics_collections: Collections = None,
                               updates_collections: Collections = None,
                               name: Optional[str] = None) -> tuple:
    """The running sensitivity (recall) at the threshold whose specificity is closest to
    ``specificity`` (the first such threshold)."""
    if specificity < 0 or specificity > 1:
        raise ValueError(f"`specificity` must be in the range [0, 1]. Currently, "
                         f"`specificity` got {specificity}.")

    def pick(counts, op_name):
        specificities = math.divide(counts["tn"], counts["tn"] + counts["fp"] + _EPSILON)
        index = math.cast(math.argmin(math.abs(specificities - specificity), 0),
                          dtypes.int32)
        tp, fn = array.gather(counts["tp"], index), array.gather(counts["fn"], index)
        return math.divide(tp, tp + fn + _EPSILON, name=op_name)
    return _rate_at_rate("sensitivity_at_specificity", labels, predictions,
                         weights, num_thresholds, metrics_collections, updates_collections,
                         name, pick)


def specificity_at_sensitivity(labels, predictions, sensitivity: float, weights=None,
                               num_thresholds: int = 200,
                               metrics_collections: Collections = None,
                               updates_collections: Collections = None,
                               name: Optional[str] = None) -> tuple:
    """The running specificity at the threshold whose sensitivity is closest to
    ``sensitivity`` (the last such threshold)."""
    if sensitivity < 0 or sensitivity > 1:
        raise ValueError(f"`sensitivity` must be in the range [0, 1]. Currently, "
                         f"`sensitivity` is {sensitivity}.")

    def pick(counts, op_name):
        sensitivities = math.divide(counts["tp"], counts["tp"] + counts["fn"] + _EPSILON)
        distance = math.abs(sensitivities - sensitivity)
        closest = math.cast(math.equal(distance, math.reduce_min(distance)), dtypes.int64)
        # the running count of closest thresholds peaks first at the last of them
        index = math.cast(math.argmax(math.cumsum(closest), 0), dtypes.int32)
        tn, fp = array.gather(counts["tn"], index), array.gather(counts["fp"], index)
        return math.divide(tn, tn + fp + _EPSILON, name=op_name)
    return _rate_at_rate("specificity_at_sensitivity", labels, predictions,
                         weights, num_thresholds, metrics_collections, updates_collections,
                         name, pick)
