"""Cross entropies and other losses."""
from __future__ import annotations

from typing import Optional

import numpy as np

from gradflow.framework import errors
from gradflow.framework.graph import Tensor, get_default_graph, name_scope
from gradflow.framework.registry import RegisterGradient, define_op, gradient_needed
from gradflow.framework.tensor_shape import TensorShape
from gradflow.ops import array
from gradflow.ops import math as math_ops
from gradflow.ops.common import apply_op, as_tensor, check_dtype_in, constructor
from gradflow.ops.nn.activations import log_softmax, log_softmax_array, softmax, softmax_backward
from gradflow.ops.nn.helpers import (INDEX_TYPES, axis_alias, check_matching_dtype, check_rank,
                                     floating_tensor, scalar)


def _check_same_shape(logits: Tensor, labels: Tensor) -> None:
    if not logits.shape.is_compatible_with(labels.shape):
        raise ValueError(f"`logits` and `labels` must have the same shape, received "
                         f"({logits.shape} vs {labels.shape}). (logits: {logits.name}, "
                         f"labels: {labels.name})")


def _is_zero(grad: Optional[Tensor]) -> bool:
    """True for a missing gradient or the zeros the backward pass fills in for one."""
    return grad is None or grad.op.type == "ZerosLike"


# -------------------------------------------------------------------- cross entropies
def _infer_softmax_xent(inputs, attrs):
    logits, labels = inputs
    op_type = "SoftmaxCrossEntropyWithLogits"
    check_rank(logits, 1, op_type, "logits", at_least=True)
    check_matching_dtype(labels, logits, op_type, "labels", "logits")
    if not logits.shape.is_compatible_with(labels.shape):
        raise ValueError(f"logits and labels must have the same shape, but logits "
                         f"({logits.name}) has shape {logits.shape} and labels "
                         f"({labels.name}) has shape {labels.shape}")
    shape = logits.shape.merge_with(labels.shape)
    return [(logits.dtype, shape[:-1]), (logits.dtype, shape)]


def _softmax_xent_kernel(logits, labels):
    log_p = log_softmax_array(logits, -1)
    # The exact derivative; TF's kernel drops the label mass, assuming it is 1.
    mass = np.sum(labels, axis=-1, keepdims=True)
    return -np.sum(labels * log_p, axis=-1), np.exp(log_p) * mass - labels


define_op("SoftmaxCrossEntropyWithLogits", infer=_infer_softmax_xent,
          kernel=_softmax_xent_kernel)


@RegisterGradient("SoftmaxCrossEntropyWithLogits")
def _softmax_xent_grad(op, grad_loss, grad_backprop):
    """The loss contributes through ``backprop`` (d loss / d logits) and -log_softmax.

    When something differentiated the ``backprop`` output itself (a second derivative),
    its gradient flows back through backprop = softmax(logits) * sum(labels) - labels.
    """
    logits, labels = op.inputs
    outer = array.expand_dims(grad_loss, -1)
    d_logits = outer * op.outputs[1] if gradient_needed(logits) else None
    d_labels = -outer * log_softmax(logits) if gradient_needed(labels) else None
    if not _is_zero(grad_backprop):
        p = softmax(logits)
        if d_logits is not None:
            mass = math_ops.reduce_sum(labels, -1, keepdims=True)
            d_logits = d_logits + mass * softmax_backward(p, grad_backprop)
        if d_labels is not None:
            along_p = math_ops.reduce_sum(grad_backprop * p, -1, keepdims=True)
            d_labels = d_labels + along_p - grad_backprop
    return d_logits, d_labels


def _infer_sparse_xent(inputs, attrs):
    logits, labels = inputs
    op_type = "SparseSoftmaxCrossEntropyWithLogits"
    check_dtype_in(labels, INDEX_TYPES, op_type, "labels")
    check_rank(logits, 1, op_type, "logits", at_least=True)
    lo, la = logits.shape, labels.shape
    if lo.ndims is not None and la.ndims is not None:
        if la.ndims != lo.ndims - 1:
            raise ValueError(f"`labels.shape.rank` must equal `logits.shape.rank - 1`. "
                             f"Received: labels.shape={la} of rank {la.ndims} and "
                             f"logits.shape={lo} of rank {lo.ndims} (labels: {labels.name}, "
                             f"logits: {logits.name})")
        if not la.is_compatible_with(lo[:-1]):
            raise ValueError(f"`labels.shape` must equal `logits.shape` except for the last "
                             f"dimension. Received: labels.shape={la} and logits.shape={lo} "
                             f"(labels: {labels.name}, logits: {logits.name})")
        lo = la.merge_with(lo[:-1]).concatenate(lo[-1:])
    return [(logits.dtype, lo[:-1] if lo.ndims is not None else la), (logits.dtype, lo)]


def _sparse_xent_kernel(logits, labels):
    classes = logits.shape[-1]
    bad = (labels < 0) | (labels >= classes)
    if bad.any():
        values = " ".join(str(v) for v in labels.reshape(-1))
        raise errors.InvalidArgumentError(
            None, None, f"Received a label value of {labels[bad][0]} which is outside the "
            f"valid range of [0, {classes}).  Label values: {values}")
    log_p = log_softmax_array(logits, -1)
    picked = labels[..., None]
    loss = -np.take_along_axis(log_p, picked, axis=-1)[..., 0]
    backprop = np.exp(log_p)
    np.put_along_axis(backprop, picked, np.take_along_axis(backprop, picked, axis=-1) - 1, -1)
    return loss, backprop


define_op("SparseSoftmaxCrossEntropyWithLogits", infer=_infer_sparse_xent,
          kernel=_sparse_xent_kernel)


@RegisterGradient("SparseSoftmaxCrossEntropyWithLogits")
def _sparse_xent_grad(op, grad_loss, grad_backprop):
    """As for the dense loss, with one-hot labels (mass 1, no label gradient)."""
    d_logits = array.expand_dims(grad_loss, -1) * op.outputs[1]
    if not _is_zero(grad_backprop):
        d_logits = d_logits + softmax_backward(softmax(op.inputs[0]), grad_backprop)
    return d_logits, None


def _loss_operands(labels, logits, op_type: str) -> tuple[Tensor, Tensor]:
    """Both as tensors; labels given as Python or NumPy values take the logits' dtype."""
    logits_t = floating_tensor(logits, op_type, "logits")
    labels_t = as_tensor(labels, dtype=None if isinstance(labels, Tensor) else logits_t.dtype,
                         name="labels", like=logits_t)
    return labels_t, logits_t


def _logits_last(t: Tensor, axis: int) -> Tensor:
    """``t`` with ``axis`` moved to the end (the cross-entropy ops reduce the last axis)."""
    ndims = t.shape.ndims
    if axis == -1 or (ndims is not None and axis == ndims - 1):
        return t
    if ndims is None:
        raise ValueError(f"softmax cross entropy along axis {axis} needs logits of known "
                         f"rank ({t.name})")
    axis %= ndims
    return array.transpose(t, [d for d in range(ndims) if d != axis] + [axis])


@constructor("softmax_cross_entropy_with_logits", "labels", "logits", "axis", "dim",
             single_op=False)
def softmax_cross_entropy_with_logits_v2(labels, logits, axis: Optional[int] = None,
                                         name: Optional[str] = None,
                                         dim: Optional[int] = None) -> Tensor:
    """-sum(labels * log_softmax(logits)) along ``axis``; differentiable in both arguments."""
    axis = axis_alias(axis, dim, -1)
    with name_scope(name, "softmax_cross_entropy_with_logits", [logits, labels]) as scope:
        labels_t, logits_t = _loss_operands(labels, logits, "SoftmaxCrossEntropyWithLogits")
        if labels_t.dtype is not logits_t.dtype and (labels_t.dtype.is_integer or
                                                     labels_t.dtype.is_floating):
            labels_t = math_ops.cast(labels_t, logits_t.dtype)  # TF1 casts the labels too
        loss, _ = apply_op("SoftmaxCrossEntropyWithLogits",
                           [_logits_last(logits_t, axis), _logits_last(labels_t, axis)],
                           name=scope)
        return loss


@constructor("softmax_cross_entropy_with_logits", "labels", "logits", "dim", "axis",
             single_op=False)
def softmax_cross_entropy_with_logits(labels=None, logits=None, dim: int = -1,
                                      name: Optional[str] = None,
                                      axis: Optional[int] = None) -> Tensor:
    """TF1's deprecated form: like the v2 op, but no gradient flows into ``labels``."""
    if labels is None or logits is None:
        raise ValueError("Both labels and logits must be provided.")
    axis = axis_alias(axis, None if dim == -1 else dim, -1)
    with name_scope(name, "softmax_cross_entropy_with_logits_sg", [logits, labels]):
        labels_t, logits_t = _loss_operands(labels, logits, "SoftmaxCrossEntropyWithLogits")
        labels_t = array.stop_gradient(labels_t, name="labels_stop_gradient")
        return softmax_cross_entropy_with_logits_v2(labels=labels_t, logits=logits_t,
                                                    axis=axis)


@constructor("SparseSoftmaxCrossEntropyWithLogits", "labels", "logits", single_op=False)
def sparse_softmax_cross_entropy_with_logits(labels=None, logits=None,
                                             name: Optional[str] = None) -> Tensor:
    """-log_softmax(logits)[labels]; labels are class indices (out of range: an error)."""
    if labels is None or logits is None:
        raise ValueError("Both labels and logits must be provided.")
    with name_scope(name, "SparseSoftmaxCrossEntropyWithLogits", [logits, labels]):
        logits_t = floating_tensor(logits, "SparseSoftmaxCrossEntropyWithLogits", "logits")
        labels_t = as_tensor(labels, name="labels", like=logits_t)
        # TF1's graph: the labels' Shape (for its rank checks), then the op inside the scope
        array.shape(labels_t)
        loss, _ = apply_op("SparseSoftmaxCrossEntropyWithLogits", [logits_t, labels_t],
                           name=_requested_name(name))
        return loss


def _requested_name(scope: str) -> str:
    """The name a caller asked for, given the scope ``op_scope`` opened for it: TF1 names
    the inner op as asked (``xentropy/xentropy``), not as uniquified (``xentropy_1``)."""
    parent, _, last = scope.rstrip("/").rpartition("/")
    base, _, suffix = last.rpartition("_")
    if base and suffix.isdigit():
        prefix = f"{parent}/" if parent else ""
        graph = get_default_graph()
        with graph.name_scope(None):  # asked from the root: the names are absolute
            taken = graph.unique_name(prefix + base, mark_as_used=False) != prefix + base
        if taken:
            return base  # the suffix is the scope's uniquifier: base was taken already
    return last


def _infer_sigmoid_xent(inputs, attrs):
    logits, labels = inputs
    check_matching_dtype(labels, logits, "SigmoidCrossEntropyWithLogits", "labels", "logits")
    _check_same_shape(logits, labels)
    return [(logits.dtype, logits.shape.merge_with(labels.shape))]


def _sigmoid_xent_kernel(x, z):
    # max(x, 0) - x z + log(1 + exp(-|x|)): log(1 + exp(x)) - x z without overflow.
    return np.maximum(x, 0) - x * z + np.log1p(np.exp(-np.abs(x)))


define_op("SigmoidCrossEntropyWithLogits", infer=_infer_sigmoid_xent,
          kernel=_sigmoid_xent_kernel)


@RegisterGradient("SigmoidCrossEntropyWithLogits")
def _sigmoid_xent_grad(op, grad):
    logits, labels = op.inputs
    d_logits = grad * (math_ops.sigmoid(logits) - labels) if gradient_needed(logits) else None
    d_labels = -grad * logits if gradient_needed(labels) else None
    return d_logits, d_labels


def _checked_loss_operands(labels, logits, op_type: str) -> tuple[Tensor, Tensor]:
    """``_loss_operands`` of one dtype and shape (for losses composed of public ops)."""
    labels_t, logits_t = _loss_operands(labels, logits, op_type)
    check_matching_dtype(labels_t, logits_t, op_type, "labels", "logits")
    _check_same_shape(logits_t, labels_t)
    return labels_t, logits_t


@constructor("logistic_loss", "labels", "logits", single_op=False)
def sigmoid_cross_entropy_with_logits(labels=None, logits=None,
                                      name: Optional[str] = None) -> Tensor:
    """Elementwise -z log(sigmoid(x)) - (1 - z) log(1 - sigmoid(x)), computed stably."""
    if labels is None or logits is None:
        raise ValueError("Both labels and logits must be provided.")
    with name_scope(name, "logistic_loss", [logits, labels]) as scope:
        labels_t, logits_t = _loss_operands(labels, logits, "SigmoidCrossEntropyWithLogits")
        return apply_op("SigmoidCrossEntropyWithLogits", [logits_t, labels_t], name=scope)


@constructor("logistic_loss", "labels", "logits", "pos_weight", "targets", single_op=False)
def weighted_cross_entropy_with_logits(labels=None, logits=None, pos_weight=None,
                                       name: Optional[str] = None, targets=None) -> Tensor:
    """Sigmoid cross entropy with the positive term weighted by ``pos_weight``.

    (1 - z) x + (1 + (q - 1) z) softplus(-x); ``targets`` is TF1's name for ``labels``.
    """
    if targets is not None:
        if labels is not None:
            raise ValueError("Cannot specify both 'targets' and 'labels'.")
        labels = targets
    if labels is None or logits is None or pos_weight is None:
        raise ValueError("labels, logits and pos_weight must all be provided.")
    with name_scope(name, "logistic_loss", [logits, labels]) as scope:
        z, x = _checked_loss_operands(labels, logits, "weighted_cross_entropy_with_logits")
        q = as_tensor(pos_weight, dtype=None if isinstance(pos_weight, Tensor) else x.dtype,
                      name="pos_weight", like=x)
        one = scalar(1, x)
        log_weight = one + (q - one) * z
        return math_ops.add((one - z) * x, log_weight * math_ops.softplus(-x), name=scope)


define_op("L2Loss", infer=lambda inputs, attrs: [(inputs[0].dtype, TensorShape([]))],
          kernel=lambda x: np.asarray(np.sum(np.square(x)) / 2, dtype=x.dtype))


@RegisterGradient("L2Loss")
def _l2_loss_grad(op, grad):
    return op.inputs[0] * grad


@constructor("L2Loss", "t")
def l2_loss(t, name: Optional[str] = None) -> Tensor:
    """sum(t ** 2) / 2, a scalar."""
    return apply_op("L2Loss", [floating_tensor(t, "L2Loss", "t")], name=name or "L2Loss")
