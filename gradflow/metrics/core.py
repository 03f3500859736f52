"""TF1's streaming metrics built on running totals: means, accuracy, errors, counts,
precision and recall, mean IoU and mean per-class accuracy.

A metric returns ``(value, update_op)``. Its state lives in local variables (collections
``LOCAL_VARIABLES`` and ``METRIC_VARIABLES``, not trainable) under the metric's name
scope; ``update_op`` folds a batch into the state and returns the new value; ``value``
only reads the state; ``local_variables_initializer()`` resets it.
"""
from __future__ import annotations

from typing import Optional, Sequence

from gradflow.framework import dtypes
from gradflow.framework.constant import convert_to_tensor
from gradflow.framework.graph import GraphKeys, Tensor, get_default_graph, name_scope
from gradflow.framework.indexed_slices import IndexedSlices
from gradflow.losses.weights import (broadcast_weights, remove_squeezable_dimensions,
                                     squeeze_weights_like, to_float32)
from gradflow.ops import array, math, state

__all__ = ["metric_variable", "mean", "mean_tensor", "accuracy", "mean_absolute_error",
           "mean_squared_error", "root_mean_squared_error", "mean_cosine_distance",
           "mean_relative_error", "percentage_below", "true_positives", "false_positives",
           "true_negatives", "false_negatives", "precision", "recall", "mean_iou",
           "mean_per_class_accuracy"]

Collections = Optional[Sequence[str]]


def metric_variable(shape, dtype, validate_shape: bool = True,
                    name: Optional[str] = None) -> state.Variable:
    """A zero-initialised local variable holding part of a metric's state."""
    return state.Variable(lambda: array.zeros(shape, dtype), trainable=False,
                          collections=[GraphKeys.LOCAL_VARIABLES, GraphKeys.METRIC_VARIABLES],
                          validate_shape=validate_shape, name=name)


def collect(value, update, metrics_collections: Collections,
            updates_collections: Collections) -> tuple:
    """Adds the pair to the requested collections and returns it."""
    graph = get_default_graph()
    if metrics_collections:
        graph.add_to_collections(metrics_collections, value)
    if updates_collections:
        graph.add_to_collections(updates_collections, update)
    return value, update


def squeezed(predictions, labels, weights) -> tuple:
    """TF1's metric preprocessing: drop a squeezable trailing axis of predictions or
    labels (then check their shapes agree) and fit the weights' rank to the predictions'."""
    predictions = convert_to_tensor(predictions)
    if labels is not None:
        labels, predictions = remove_squeezable_dimensions(convert_to_tensor(labels),
                                                           predictions)
        predictions.shape.assert_is_compatible_with(labels.shape)
    if weights is not None:
        weights = squeeze_weights_like(weights, predictions, expand=True)
    return predictions, labels, weights


def _safe_ratio(total, count, name: str) -> Tensor:
    return math.div_no_nan(total, math.maximum(count, 0.0), name=name)


def _mean(values, weights, metrics_collections, updates_collections) -> tuple:
    values = to_float32(values)
    total = metric_variable([], dtypes.float32, name="total")
    count = metric_variable([], dtypes.float32, name="count")
    if weights is None:
        num_values = math.cast(array.size(values), dtypes.float32)
    else:
        values, _, weights = squeezed(values, None, weights)
        weights = broadcast_weights(to_float32(weights), values)
        values = math.multiply(values, weights, name="Mul")
        num_values = math.reduce_sum(weights)
    update_total = state.assign_add(total, math.reduce_sum(values))
    update_count = state.assign_add(count, num_values)
    return collect(_safe_ratio(total, count, "value"),
                   _safe_ratio(update_total, update_count, "update_op"),
                   metrics_collections, updates_collections)


def mean(values, weights=None, metrics_collections: Collections = None,
         updates_collections: Collections = None, name: Optional[str] = None) -> tuple:
    """The running (weighted) mean of ``values``: sum(w v) / sum(w), 0 before any data."""
    graph = get_default_graph()
    with graph.atomic(), name_scope(name, "mean", (values, weights)):
        return _mean(values, weights, metrics_collections, updates_collections)


def mean_tensor(values, weights=None, metrics_collections: Collections = None,
                updates_collections: Collections = None, name: Optional[str] = None) -> tuple:
    """The running elementwise mean of ``values`` (whose shape must be fully known)."""
    graph = get_default_graph()
    with graph.atomic(), name_scope(name, "mean", (values, weights)):
        values = to_float32(values)
        if not values.shape.is_fully_defined():
            raise ValueError(f"Cannot convert a partially known TensorShape {values.shape} "
                             f"to a Tensor.")
        total = metric_variable(values.shape, dtypes.float32, name="total_tensor")
        count = metric_variable(values.shape, dtypes.float32, name="count_tensor")
        num_values = array.ones_like(values)
        if weights is not None:
            values, _, weights = squeezed(values, None, weights)
            weights = broadcast_weights(to_float32(weights), values)
            values = math.multiply(values, weights, name="Mul")
            num_values = math.multiply(num_values, weights, name="Mul")
        update_total = state.assign_add(total, values)
        update_count = state.assign_add(count, num_values)
        return collect(_safe_ratio(total, count, "value"),
                       _safe_ratio(update_total, update_count, "update_op"),
                       metrics_collections, updates_collections)


def accuracy(labels, predictions, weights=None, metrics_collections: Collections = None,
             updates_collections: Collections = None, name: Optional[str] = None) -> tuple:
    """The running (weighted) fraction of ``predictions`` equal to ``labels``."""
    graph = get_default_graph()
    with graph.atomic():
        predictions, labels, weights = squeezed(predictions, labels, weights)
        if labels.dtype is not predictions.dtype:
            predictions = math.cast(predictions, labels.dtype)
        is_correct = math.cast(math.equal(predictions, labels), dtypes.float32)
        with name_scope(name, "accuracy", (is_correct, weights)):
            return _mean(is_correct, weights, metrics_collections, updates_collections)


def _mean_of(default_name: str, make_values, labels, predictions, weights,
             metrics_collections, updates_collections, name) -> tuple:
    """``mean`` of ``make_values(labels, predictions)`` after TF1's preprocessing."""
    graph = get_default_graph()
    with graph.atomic():
        predictions, labels, weights = squeezed(predictions, labels, weights)
        values = make_values(labels, predictions)
        with name_scope(name, default_name, (values, weights)):
            return _mean(values, weights, metrics_collections, updates_collections)


def mean_absolute_error(labels, predictions, weights=None,
                        metrics_collections: Collections = None,
                        updates_collections: Collections = None,
                        name: Optional[str] = None) -> tuple:
    """The running (weighted) mean of |predictions - labels|."""
    return _mean_of("mean_absolute_error", lambda y, p: math.abs(p - y), labels, predictions,
                    weights, metrics_collections, updates_collections, name)


def mean_squared_error(labels, predictions, weights=None,
                       metrics_collections: Collections = None,
                       updates_collections: Collections = None,
                       name: Optional[str] = None) -> tuple:
    """The running (weighted) mean of (labels - predictions) ** 2."""
    return _mean_of("mean_squared_error", math.squared_difference, labels, predictions,
                    weights, metrics_collections, updates_collections, name)


def root_mean_squared_error(labels, predictions, weights=None,
                            metrics_collections: Collections = None,
                            updates_collections: Collections = None,
                            name: Optional[str] = None) -> tuple:
    """The square root of the running mean squared error (its ``Sqrt`` ops lie outside
    the metric's scope, as in TF1)."""
    graph = get_default_graph()
    with graph.atomic():
        mse, update_mse = _mean_of("root_mean_squared_error", math.squared_difference,
                                   labels, predictions, weights, None, None, name)
        return collect(math.sqrt(mse), math.sqrt(update_mse), metrics_collections,
                       updates_collections)


def mean_cosine_distance(labels, predictions, dim: int, weights=None,
                         metrics_collections: Collections = None,
                         updates_collections: Collections = None,
                         name: Optional[str] = None) -> tuple:
    """1 - the running mean of sum(labels * predictions, dim) (unit-normalised inputs)."""
    graph = get_default_graph()
    with graph.atomic():
        predictions, labels, weights = squeezed(predictions, labels, weights)
        products = math.reduce_sum(math.multiply(predictions, labels), axis=[dim],
                                   keepdims=True)
        with name_scope(name, "mean_cosine_distance", (products, weights)):
            mean_products, update = _mean(products, weights, None, None)
        return collect(math.subtract(1.0, mean_products, name="Sub"),
                       math.subtract(1.0, update, name="Sub"),
                       metrics_collections, updates_collections)


def mean_relative_error(labels, predictions, normalizer, weights=None,
                        metrics_collections: Collections = None,
                        updates_collections: Collections = None,
                        name: Optional[str] = None) -> tuple:
    """The running mean of |labels - predictions| / normalizer (0 where it is 0)."""
    graph = get_default_graph()
    with graph.atomic():
        predictions, labels, weights = squeezed(predictions, labels, weights)
        normalizer, predictions = remove_squeezable_dimensions(convert_to_tensor(normalizer),
                                                               predictions)
        predictions.shape.assert_is_compatible_with(normalizer.shape)
        relative = math.select(math.equal(normalizer, 0.0), array.zeros_like(labels),
                               math.divide(math.abs(labels - predictions), normalizer))
        with name_scope(name, "mean_relative_error", (relative, weights)):
            return _mean(relative, weights, metrics_collections, updates_collections)


def percentage_below(values, threshold, weights=None, metrics_collections: Collections = None,
                     updates_collections: Collections = None,
                     name: Optional[str] = None) -> tuple:
    """The running (weighted) fraction of ``values`` below ``threshold``."""
    graph = get_default_graph()
    with graph.atomic():
        below = math.cast(math.less(values, threshold), dtypes.float32)
        with name_scope(name, "percentage_below_threshold", (below, weights)):
            return _mean(below, weights, metrics_collections, updates_collections)


# ------------------------------------------------------------------------ counts
def _count(condition: Tensor, weights, metrics_collections, updates_collections) -> tuple:
    """The running (weighted) number of true elements of ``condition``."""
    count = metric_variable([], dtypes.float32, name="count")
    values = math.cast(condition, dtypes.float32)
    if weights is not None:
        weights = convert_to_tensor(weights)
        w_rank, rank = weights.shape.ndims, values.shape.ndims
        if w_rank not in (None, 0) and rank is not None and w_rank != rank:
            raise ValueError(f"weights must have rank 0 or {rank} (the rank of the values), "
                             f"got shape {weights.shape}")
        values = math.multiply(values, to_float32(weights), name="Mul")
    return collect(array.identity(count), state.assign_add(count, math.reduce_sum(values)),
                   metrics_collections, updates_collections)


def _condition_count(default_name: str, label_is: bool, prediction_is: bool, labels,
                     predictions, weights, metrics_collections, updates_collections,
                     name) -> tuple:
    graph = get_default_graph()
    with graph.atomic(), name_scope(name, default_name, (predictions, labels, weights)):
        predictions, labels, weights = squeezed(math.cast(predictions, dtypes.bool),
                                                math.cast(labels, dtypes.bool), weights)
        condition = math.logical_and(math.equal(labels, label_is),
                                     math.equal(predictions, prediction_is))
        return _count(condition, weights, metrics_collections, updates_collections)


def _count_metric(default_name: str, label_is: bool, prediction_is: bool, doc: str):
    """The public counting metric ``default_name``: labels ``label_is`` and predictions
    ``prediction_is`` (the four confusion-matrix cells share one body)."""
    def metric(labels, predictions, weights=None, metrics_collections: Collections = None,
               updates_collections: Collections = None, name: Optional[str] = None) -> tuple:
        return _condition_count(default_name, label_is, prediction_is, labels, predictions,
                                weights, metrics_collections, updates_collections, name)
    metric.__name__ = metric.__qualname__ = default_name
    metric.__doc__ = doc
    return metric


true_positives = _count_metric("true_positives", True, True,
                               "The running (weighted) count of labels and predictions both "
                               "true.")
false_positives = _count_metric("false_positives", False, True,
                                "The running (weighted) count of false labels predicted true.")
true_negatives = _count_metric("true_negatives", False, False,
                               "The running (weighted) count of labels and predictions both "
                               "false.")
false_negatives = _count_metric("false_negatives", True, False,
                                "The running (weighted) count of true labels predicted false.")


def _ratio_metric(default_name: str, other, labels, predictions, weights,
                  metrics_collections, updates_collections, name) -> tuple:
    """tp / (tp + other), 0 while the denominator is 0 (precision, recall)."""
    graph = get_default_graph()
    with graph.atomic(), name_scope(name, default_name, (predictions, labels, weights)):
        predictions, labels, weights = squeezed(math.cast(predictions, dtypes.bool),
                                                math.cast(labels, dtypes.bool), weights)
        tp, tp_update = true_positives(labels, predictions, weights)
        other_value, other_update = other(labels, predictions, weights)

        def ratio(hits, misses, op_name):
            return math.select(math.greater(hits + misses, 0.0),
                               math.divide(hits, hits + misses), 0.0, name=op_name)
        return collect(ratio(tp, other_value, "value"),
                       ratio(tp_update, other_update, "update_op"),
                       metrics_collections, updates_collections)


def precision(labels, predictions, weights=None, metrics_collections: Collections = None,
              updates_collections: Collections = None, name: Optional[str] = None) -> tuple:
    """The running precision tp / (tp + fp) of boolean predictions."""
    return _ratio_metric("precision", false_positives, labels, predictions, weights,
                         metrics_collections, updates_collections, name)


def recall(labels, predictions, weights=None, metrics_collections: Collections = None,
           updates_collections: Collections = None, name: Optional[str] = None) -> tuple:
    """The running recall tp / (tp + fn) of boolean predictions."""
    return _ratio_metric("recall", false_negatives, labels, predictions, weights,
                         metrics_collections, updates_collections, name)


# ------------------------------------------------------------- class confusion
def _flat(t: Tensor) -> Tensor:
    return array.reshape(t, [-1]) if t.shape.ndims is None or t.shape.ndims > 1 else t


def _confusion_matrix(labels: Tensor, predictions: Tensor, num_classes: int, weights=None,
                     dtype=dtypes.float64) -> Tensor:
    """The [num_classes, num_classes] (weighted) counts of (label, prediction) pairs.

    A class id outside [0, num_classes) makes the run fail (InvalidArgumentError).
    """
    graph = get_default_graph()
    with graph.name_scope("confusion_matrix"):
        labels = math.cast(labels, dtypes.int64)
        predictions = math.cast(predictions, dtypes.int64)
        valid = math.logical_and(
            math.logical_and(math.greater_equal(labels, 0), math.less(labels, num_classes)),
            math.logical_and(math.greater_equal(predictions, 0),
                             math.less(predictions, num_classes)))
        cells = num_classes * num_classes
        # an invalid pair goes to the segment one past the end: the run fails there
        ids = math.select(valid, labels * num_classes + predictions,
                          array.ones_like(labels) * cells)
        counts = array.ones_like(labels, dtype=dtype) if weights is None else \
            math.cast(weights, dtype) * array.ones_like(labels, dtype=dtype)
        summed = array.unsorted_segment_sum(counts, ids, cells)
        return array.reshape(summed, [num_classes, num_classes])


def mean_iou(labels, predictions, num_classes: int, weights=None,
             metrics_collections: Collections = None, updates_collections: Collections = None,
             name: Optional[str] = None) -> tuple:
    """The running mean intersection-over-union over classes that occurred.

    As in TF1, ``update_op`` returns the accumulated float64 confusion matrix.
    """
    graph = get_default_graph()
    with graph.atomic(), name_scope(name, "mean_iou", (predictions, labels, weights)):
        predictions, labels = convert_to_tensor(predictions), convert_to_tensor(labels)
        predictions.shape.assert_is_compatible_with(labels.shape)
        total = metric_variable([num_classes, num_classes], dtypes.float64,
                                name="total_confusion_matrix")
        flat_weights = None if weights is None else _flat(convert_to_tensor(weights))
        current = _confusion_matrix(_flat(labels), _flat(predictions), num_classes,
                                   flat_weights)
        update = state.assign_add(total, current)
        cm = convert_to_tensor(total)
        sum_over_rows = math.cast(math.reduce_sum(cm, 0), dtypes.float32)
        sum_over_cols = math.cast(math.reduce_sum(cm, 1), dtypes.float32)
        diagonal = math.cast(array.diag_part(cm), dtypes.float32)
        denominator = sum_over_rows + sum_over_cols - diagonal
        valid = math.reduce_sum(math.cast(math.not_equal(denominator, 0.0), dtypes.float32))
        denominator = math.select(math.greater(denominator, 0.0), denominator,
                                  array.ones_like(denominator), name="Select")
        iou = math.divide(diagonal, denominator)
        value = math.select(math.greater(valid, 0.0),
                            math.reduce_sum(iou, name="mean_iou") / valid, 0.0, name="Select")
        return collect(value, update, metrics_collections, updates_collections)


def mean_per_class_accuracy(labels, predictions, num_classes: int, weights=None,
                            metrics_collections: Collections = None,
                            updates_collections: Collections = None,
                            name: Optional[str] = None) -> tuple:
    """The running accuracy of each class (by label), averaged over the classes.

    As in TF1, ``update_op`` returns the per-class accuracies [num_classes].
    """
    graph = get_default_graph()
    with graph.atomic(), name_scope(name, "mean_accuracy", (predictions, labels, weights)):
        labels = _flat(math.cast(convert_to_tensor(labels), dtypes.int64))
        predictions = _flat(convert_to_tensor(predictions))
        predictions.shape.assert_is_compatible_with(labels.shape)
        total = metric_variable([num_classes], dtypes.float32, name="total")
        count = metric_variable([num_classes], dtypes.float32, name="count")
        ones = array.ones_like(labels, dtype=dtypes.float32)
        if labels.dtype is not predictions.dtype:
            predictions = math.cast(predictions, labels.dtype)
        is_correct = math.cast(math.equal(predictions, labels), dtypes.float32)
        if weights is not None:
            weights = to_float32(_flat(convert_to_tensor(weights)))
            is_correct = is_correct * weights
            ones = ones * weights
        update_total = total.scatter_add(IndexedSlices(ones, labels))
        update_count = count.scatter_add(IndexedSlices(is_correct, labels))
        per_class = _safe_ratio(count, total, "div_no_nan")
        return collect(math.reduce_mean(per_class, name="mean_accuracy"),
                       _safe_ratio(update_count, update_total, "update_op"),
                       metrics_collections, updates_collections)
