"""The loss functions of TF1's ``tf.losses``, each a scope of elementwise ops that ends in
``compute_weighted_loss`` (weights, reduction, ``loss_collection``).

As in TF1, regression-style losses compute in float32 whatever their inputs' dtype; the
cross-entropy losses compute in the logits' dtype and return it.
"""
from __future__ import annotations

from typing import Optional

from gradflow.framework import dtypes
from gradflow.framework.constant import convert_to_tensor
from gradflow.framework.graph import GraphKeys, Tensor, get_default_graph, name_scope
from gradflow.losses.core import Reduction, add_loss, num_present, weighted_loss
from gradflow.losses.weights import (remove_squeezable_dimensions, squeeze_weights_like,
                                     to_float32)
from gradflow.ops import array, math, nn

__all__ = ["absolute_difference", "cosine_distance", "hinge_loss", "huber_loss", "log_loss",
           "mean_pairwise_squared_error", "mean_squared_error", "sigmoid_cross_entropy",
           "softmax_cross_entropy", "sparse_softmax_cross_entropy"]

_DEFAULT = Reduction.SUM_BY_NONZERO_WEIGHTS


def _required(**arguments) -> None:
    for name, value in arguments.items():
        if value is None:
            raise ValueError(f"Argument `{name}` must not be None.")


def _float_pair(labels, predictions) -> tuple[Tensor, Tensor]:
    """Both cast to float32 (predictions first, as TF1) and checked for compatible shapes."""
    predictions = to_float32(convert_to_tensor(predictions))
    labels = to_float32(convert_to_tensor(labels))
    predictions.shape.assert_is_compatible_with(labels.shape)
    return labels, predictions


def _elementwise_loss(default_name: str, labels, predictions, weights, scope,
                      loss_collection, reduction, body, second: str = "predictions") -> Tensor:
    """The frame of every regression-style loss: checks, float32 casts, ``body``, weights.

    ``second`` is the public name of the predictions argument (for error messages).
    """
    _required(**{"labels": labels, second: predictions})
    Reduction.validate(reduction)
    graph = get_default_graph()
    with graph.atomic(), name_scope(scope, default_name, (predictions, labels, weights)):
        labels_t, predictions_t = _float_pair(labels, predictions)
        return weighted_loss(body(labels_t, predictions_t), weights, loss_collection,
                             reduction)


def absolute_difference(labels, predictions, weights=1.0, scope: Optional[str] = None,
                        loss_collection: Optional[str] = GraphKeys.LOSSES,
                        reduction: str = _DEFAULT) -> Tensor:
    """Weighted |predictions - labels|."""
    return _elementwise_loss(
        "absolute_difference", labels, predictions, weights, scope, loss_collection,
        reduction, lambda y, p: math.abs(math.subtract(p, y, name="Sub"), name="Abs"))


def mean_squared_error(labels, predictions, weights=1.0, scope: Optional[str] = None,
                       loss_collection: Optional[str] = GraphKeys.LOSSES,
                       reduction: str = _DEFAULT) -> Tensor:
    """Weighted (predictions - labels) ** 2."""
    return _elementwise_loss(
        "mean_squared_error", labels, predictions, weights, scope, loss_collection,
        reduction, lambda y, p: math.squared_difference(p, y, name="SquaredDifference"))


def huber_loss(labels, predictions, weights=1.0, delta: float = 1.0,
               scope: Optional[str] = None,
               loss_collection: Optional[str] = GraphKeys.LOSSES,
               reduction: str = _DEFAULT) -> Tensor:
    """Weighted Huber loss: quadratic up to |error| = ``delta``, linear beyond."""
    def body(y, p):
        error = math.abs(math.subtract(p, y, name="Sub"), name="Abs")
        quadratic = math.minimum(error, delta, name="Minimum")
        linear = math.subtract(error, quadratic, name="Sub")
        half = convert_to_tensor(0.5, dtype=dtypes.float32, name="Const")
        squares = math.multiply(half, math.multiply(quadratic, quadratic, name="Mul"),
                                name="Mul")
        return math.add(squares, math.multiply(delta, linear, name="Mul"), name="Add")
    return _elementwise_loss("huber_loss", labels, predictions, weights, scope,
                             loss_collection, reduction, body)


def log_loss(labels, predictions, weights=1.0, epsilon: float = 1e-7,
             scope: Optional[str] = None,
             loss_collection: Optional[str] = GraphKeys.LOSSES,
             reduction: str = _DEFAULT) -> Tensor:
    """Weighted -y log(p + epsilon) - (1 - y) log(1 - p + epsilon)."""
    def body(y, p):
        positive = math.multiply(y, math.log(math.add(p, epsilon, name="add"), name="Log"),
                                 name="Mul")
        one_minus_y = math.subtract(1.0, y, name="sub")
        one_minus_p = math.add(math.subtract(1.0, p, name="sub"), epsilon, name="add")
        negative = math.multiply(one_minus_y, math.log(one_minus_p, name="Log"), name="Mul")
        return math.subtract(math.negative(positive, name="Neg"), negative, name="sub")
    return _elementwise_loss("log_loss", labels, predictions, weights, scope,
                             loss_collection, reduction, body)


def hinge_loss(labels, logits, weights=1.0, scope: Optional[str] = None,
               loss_collection: Optional[str] = GraphKeys.LOSSES,
               reduction: str = _DEFAULT) -> Tensor:
    """Weighted max(0, 1 - (2 labels - 1) logits); labels are 0 or 1."""

    def body(y, x):
        ones = array.ones_like(y, name="ones_like")
        signs = math.subtract(math.multiply(2.0, y, name="Mul"), ones, name="Sub")
        margin = math.subtract(ones, math.multiply(signs, x, name="Mul"), name="Sub")
        return nn.relu(margin, name="Relu")
    return _elementwise_loss("hinge_loss", labels, logits, weights, scope, loss_collection,
                             reduction, body, second="logits")


def cosine_distance(labels, predictions, axis: Optional[int] = None, weights=1.0,
                    scope: Optional[str] = None,
                    loss_collection: Optional[str] = GraphKeys.LOSSES,
                    reduction: str = _DEFAULT, dim: Optional[int] = None) -> Tensor:
    """Weighted 1 - sum(labels * predictions, axis) of unit-normalised inputs.

    ``dim`` is the deprecated name of ``axis``; one of them is required.
    """
    if dim is not None:
        if axis is not None:
            raise ValueError("Cannot specify both 'dim' and 'axis'.")
        axis = dim
    if axis is None:
        raise ValueError("You must specify argument `axis`.")

    def body(y, p):
        products = math.multiply(p, y, name="Mul")
        return math.subtract(1.0, math.reduce_sum(products, axis=(axis,), keepdims=True,
                                                  name="Sum"), name="sub")
    return _elementwise_loss("cosine_distance_loss", labels, predictions, weights, scope,
                             loss_collection, reduction, body)


def mean_pairwise_squared_error(labels, predictions, weights=1.0,
                                scope: Optional[str] = None,
                                loss_collection: Optional[str] = GraphKeys.LOSSES) -> Tensor:
    """Weighted mean of squared differences between all pairs of errors within a row.

    For each batch row (axis 0) with n weighted elements, the mean over pairs (i, j) of
    ((p_i - l_i) - (p_j - l_j)) ** 2; weights scale whole rows. Summed over rows.
    """
    _required(labels=labels, predictions=predictions)
    graph = get_default_graph()
    with graph.atomic(), name_scope(scope, "mean_pairwise_squared_error",
                                    (predictions, labels, weights)):
        weights = to_float32(weights)
        labels_t, predictions_t = _float_pair(labels, predictions)
        diffs = math.subtract(predictions_t, labels_t, name="Sub")
        axes = math.range(1, array.rank(diffs, name="Rank"), name="range")
        squares = math.reduce_sum(math.square(diffs, name="Square"), axis=axes, keepdims=True,
                                  name="Sum")
        present = num_present(diffs, weights, per_batch=True)
        term1 = 2.0 * math.div_no_nan(squares, math.maximum(present - 1, 0.0, name="Maximum"),
                                      name="value")
        sums = math.reduce_sum(diffs, axis=axes, keepdims=True, name="Sum")
        pairs = math.maximum(math.multiply(present, present - 1, name="Mul"), 0.0,
                             name="Maximum")
        term2 = 2.0 * math.div_no_nan(math.square(sums, name="Square"), pairs, name="value")
        loss = math.reduce_sum(math.multiply(term1 - term2, weights, name="Mul"), name="Sum")
        has_present = math.greater(math.reduce_sum(present, name="Sum"), 0.0, name="Greater")
        mean_loss = math.select(has_present, loss, array.zeros_like(loss), name="value")
        add_loss(mean_loss, loss_collection)
        return mean_loss


def _logits_loss(default_name: str, labels_arg: str, labels, logits, weights, scope,
                 loss_collection, reduction, body) -> Tensor:
    """The frame of the cross-entropy losses on same-shape labels: checks, the labels cast
    to the logits' dtype (logits converted first, as TF1), ``body``, weights.

    ``labels_arg`` is the public name of the labels argument (for error messages).
    """
    _required(**{labels_arg: labels, "logits": logits})
    Reduction.validate(reduction)
    graph = get_default_graph()
    with graph.atomic(), name_scope(scope, default_name, (logits, labels, weights)):
        logits_t = convert_to_tensor(logits)
        labels_t = math.cast(convert_to_tensor(labels), logits_t.dtype)
        logits_t.shape.assert_is_compatible_with(labels_t.shape)
        return weighted_loss(body(labels_t, logits_t), weights, loss_collection, reduction)


def sigmoid_cross_entropy(multi_class_labels, logits, weights=1.0,
                          label_smoothing: float = 0, scope: Optional[str] = None,
                          loss_collection: Optional[str] = GraphKeys.LOSSES,
                          reduction: str = _DEFAULT) -> Tensor:
    """Weighted sigmoid cross entropy; ``label_smoothing`` pulls labels towards 1/2."""
    def body(labels_t: Tensor, logits_t: Tensor) -> Tensor:
        if label_smoothing > 0:
            labels_t = labels_t * (1 - label_smoothing) + 0.5 * label_smoothing
        return nn.sigmoid_cross_entropy_with_logits(labels=labels_t, logits=logits_t,
                                                    name="xentropy")
    return _logits_loss("sigmoid_cross_entropy_loss", "multi_class_labels",
                        multi_class_labels, logits, weights, scope, loss_collection,
                        reduction, body)


def softmax_cross_entropy(onehot_labels, logits, weights=1.0,
                          label_smoothing: float = 0, scope: Optional[str] = None,
                          loss_collection: Optional[str] = GraphKeys.LOSSES,
                          reduction: str = _DEFAULT) -> Tensor:
    """Weighted softmax cross entropy of one-hot ``onehot_labels`` [batch, classes].

    ``label_smoothing`` mixes the labels with the uniform distribution over classes. No
    gradient flows into the labels (TF1 stops it).
    """
    def body(labels_t: Tensor, logits_t: Tensor) -> Tensor:
        if label_smoothing > 0:
            classes = math.cast(array.shape(labels_t, name="Shape")[-1], logits_t.dtype)
            positive = 1 - label_smoothing
            negative = label_smoothing / classes
            labels_t = labels_t * positive + negative
        labels_t = array.stop_gradient(labels_t, name="labels_stop_gradient")
        return nn.softmax_cross_entropy_with_logits_v2(labels=labels_t, logits=logits_t,
                                                       name="xentropy")
    return _logits_loss("softmax_cross_entropy_loss", "onehot_labels", onehot_labels, logits,
                        weights, scope, loss_collection, reduction, body)


def sparse_softmax_cross_entropy(labels, logits, weights=1.0, scope: Optional[str] = None,
                                 loss_collection: Optional[str] = GraphKeys.LOSSES,
                                 reduction: str = _DEFAULT) -> Tensor:
    """Weighted softmax cross entropy of integer class ids ``labels`` [batch] (or
    [batch, 1]) against ``logits`` [batch, classes]."""
    _required(labels=labels, logits=logits)
    Reduction.validate(reduction)
    graph = get_default_graph()
    with graph.atomic(), name_scope(scope, "sparse_softmax_cross_entropy_loss",
                                    (logits, labels, weights)):
        labels_t, logits_t = remove_squeezable_dimensions(
            convert_to_tensor(labels), convert_to_tensor(logits), expected_rank_diff=1)
        weights_t = squeeze_weights_like(weights, labels_t)
        if labels_t.dtype not in (dtypes.int32, dtypes.int64):
            raise TypeError(f"Value passed to parameter 'labels' has DataType "
                            f"{labels_t.dtype.name} not in list of allowed values: int32, "
                            f"int64")
        l_rank, x_rank = labels_t.shape.ndims, logits_t.shape.ndims
        if l_rank is not None and x_rank is not None and l_rank != x_rank - 1:
            raise ValueError(f"`labels.shape.rank` must equal `logits.shape.rank - 1`. "
                             f"Received: labels.shape={labels_t.shape} of rank {l_rank} and "
                             f"logits.shape={logits_t.shape} of rank {x_rank}")
        losses = nn.sparse_softmax_cross_entropy_with_logits(labels=labels_t, logits=logits_t,
                                                             name="xentropy")
        return weighted_loss(losses, weights_t, loss_collection, reduction)
