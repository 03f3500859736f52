"""Neural-network ops (``gf.nn``): activations, losses, normalisation, convolution, pooling.

Ops whose kernels need care for stability or speed (softmax, the cross entropies,
convolutions, pooling) are primitives with their own kernel; their backward steps are
ops too (``ReluGrad``, ``Conv2DBackpropInput``, ``MaxPoolGrad`` ...) whose gradients are
defined in turn, so second derivatives work. Thin conveniences (``moments``,
``l2_normalize``, ``dropout``, ``conv1d``...) are composed from public ops.

A convolution is one matrix product: every output position's receptive field becomes a
row (im2col) that multiplies the filter; its input gradient is a convolution too.
Pooling folds the few filter taps; loops run over taps, never over pixels.
"""
from __future__ import annotations

from typing import Callable, NamedTuple, Optional, Sequence

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from gradflow.framework import dtypes, errors
from gradflow.framework.constant import constant, convert_to_tensor
from gradflow.framework.graph import Operation, Tensor, name_scope
from gradflow.framework.registry import RegisterGradient, define_op, gradient_needed
from gradflow.framework.tensor_shape import TensorShape
from gradflow.ops import array
from gradflow.ops import math as math_ops
from gradflow.ops.common import (FLOATING, REAL_NUMERIC, apply_op, as_tensor, check_dtype_in,
                                 same_as_input, static_ints)
from gradflow.ops.random import random_uniform

__all__: list[str] = []

_INDEX_TYPES = (dtypes.int32, dtypes.int64)


# --------------------------------------------------------------------------- helpers
_SAME_SIZE_INTS = {2: np.int16, 4: np.int32, 8: np.int64}


def _where_else_zero(mask: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``np.where(mask, values, 0)``; for floats a bit mask, several times faster and
    exact (``values``' bits or +0.0)."""
    bits = _SAME_SIZE_INTS.get(values.dtype.itemsize) if values.dtype.kind == "f" else None
    if bits is None:
        return np.where(mask, values, 0).astype(values.dtype, copy=False)
    keep = np.asarray(mask).view(np.int8).astype(bits)
    np.negative(keep, out=keep)  # all ones where kept
    return np.bitwise_and(values.view(bits), keep, out=keep).view(values.dtype)


def _public_attrs(op: Operation) -> dict:
    """The attrs a kernel sees, to copy onto a related op (internal ``_`` attrs stay)."""
    return {k: v for k, v in op.attrs.items() if not k.startswith("_")}


def _check_rank(t: Tensor, rank: int, op_type: str, arg: str, at_least: bool = False) -> None:
    ndims = t.shape.ndims
    if ndims is None or ndims == rank or (at_least and ndims > rank):
        return
    bound = "at least rank" if at_least else "rank"
    raise ValueError(f"Shape must be {bound} {rank} but is rank {ndims} for '{op_type}' "
                     f"input '{arg}' ({t.name} with shape {t.shape})")


def _check_same_dtype(t: Tensor, reference: Tensor, op_type: str, arg: str,
                      ref_arg: str) -> None:
    if t.dtype is not reference.dtype:
        raise TypeError(f"Input '{arg}' of '{op_type}' Op has type {t.dtype.name} that does "
                        f"not match type {reference.dtype.name} of argument '{ref_arg}'. "
                        f"({arg}: {t.name}, {ref_arg}: {reference.name})")


def _check_same_shape(logits: Tensor, labels: Tensor) -> None:
    if not logits.shape.is_compatible_with(labels.shape):
        raise ValueError(f"`logits` and `labels` must have the same shape, received "
                         f"({logits.shape} vs {labels.shape}). (logits: {logits.name}, "
                         f"labels: {labels.name})")


def _is_zero(grad: Optional[Tensor]) -> bool:
    """True for a missing gradient or the zeros the backward pass fills in for one."""
    return grad is None or grad.op.type == "ZerosLike"


def _scalar(value: float, like: Tensor) -> Tensor:
    return constant(value, dtype=like.dtype)


def _axis_alias(axis, dim, default=None):
    """TF1's deprecated ``dim`` spelling of ``axis``."""
    if axis is not None and dim is not None:
        raise ValueError("Cannot specify both 'axis' and 'dim'.")
    if axis is None and dim is None:
        return default
    return axis if axis is not None else dim


def _floating(value, op_type: str, arg: str) -> Tensor:
    t = convert_to_tensor(value, name=arg)
    check_dtype_in(t, FLOATING, op_type, arg)
    return t


# ----------------------------------------------------------------------- activations
def _define_activation(op_type: str, kernel: Callable, grad_kernel: Callable, *,
                       from_output: bool, curvature: Optional[Callable] = None) -> None:
    """Defines ``op_type`` and its fused backward op ``<op_type>Grad(dy, t)``.

    ``t`` is the forward op's output when ``from_output`` (cheaper for exponentials),
    else its input. The backward op is linear in ``dy``; ``curvature(op, grad)`` is its
    gradient with respect to ``t`` (None: piecewise linear, so zero).
    """
    grad_type = op_type + "Grad"
    define_op(op_type, infer=same_as_input, kernel=kernel)
    define_op(grad_type, infer=same_as_input, kernel=grad_kernel)

    def backward(grad: Tensor, t: Tensor, op: Operation) -> Tensor:
        return apply_op(grad_type, [grad, t], name=grad_type, **_public_attrs(op))

    @RegisterGradient(op_type)
    def _first_order(op, grad):
        return backward(grad, op.outputs[0] if from_output else op.inputs[0], op)

    @RegisterGradient(grad_type)
    def _second_order(op, grad):
        t = op.inputs[1]
        d_t = curvature(op, grad) if curvature is not None else array.zeros_like(t)
        return backward(grad, t, op), d_t


def _exponential_curvature(op: Operation, grad: Tensor) -> Tensor:
    """d/dy of ``dy * (y + c)`` on the negative side (ELU, SELU): ``grad * dy`` there."""
    dy, y = op.inputs
    negative = math_ops.less(y, _scalar(0, y))
    return math_ops.select_v2(negative, grad * dy, array.zeros_like(grad))


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _negative_part_expm1(x: np.ndarray) -> np.ndarray:
    """exp(x) - 1 for x <= 0 (clamped so large positive x cannot overflow)."""
    return np.expm1(np.minimum(x, 0))


_define_activation("Relu", lambda x: np.maximum(x, 0),
                   lambda dy, x: _where_else_zero(x > 0, dy), from_output=False)
_define_activation("Relu6", lambda x: np.clip(x, 0, 6),
                   lambda dy, x: np.where((x > 0) & (x < 6), dy, 0), from_output=False)
_define_activation("LeakyRelu", lambda x, *, alpha: np.where(x > 0, x, x * alpha),
                   lambda dy, x, *, alpha: np.where(x > 0, dy, dy * alpha), from_output=False)
_define_activation("Elu", lambda x: np.where(x > 0, x, _negative_part_expm1(x)),
                   lambda dy, y: np.where(y > 0, dy, dy * (y + 1)),
                   from_output=True, curvature=_exponential_curvature)
_define_activation(
    "Selu",
    lambda x: _SELU_SCALE * np.where(x > 0, x, _SELU_ALPHA * _negative_part_expm1(x)),
    lambda dy, y: np.where(y > 0, dy * _SELU_SCALE, dy * (y + _SELU_SCALE * _SELU_ALPHA)),
    from_output=True, curvature=_exponential_curvature)


def _activation(op_type: str, features, name: Optional[str], allowed=FLOATING,
                **attrs) -> Tensor:
    x = convert_to_tensor(features, name="features")
    check_dtype_in(x, allowed, op_type, "features")
    return apply_op(op_type, [x], name=name or op_type, **attrs)


def relu(features, name: Optional[str] = None) -> Tensor:
    """max(features, 0)."""
    return _activation("Relu", features, name, REAL_NUMERIC)


def relu6(features, name: Optional[str] = None) -> Tensor:
    """min(max(features, 0), 6)."""
    return _activation("Relu6", features, name, REAL_NUMERIC)


def leaky_relu(features, alpha: float = 0.2, name: Optional[str] = None) -> Tensor:
    """features where positive, alpha * features elsewhere."""
    return _activation("LeakyRelu", features, name, alpha=float(alpha))


def elu(features, name: Optional[str] = None) -> Tensor:
    """features where positive, exp(features) - 1 elsewhere."""
    return _activation("Elu", features, name)


def selu(features, name: Optional[str] = None) -> Tensor:
    """Scaled ELU with the self-normalising constants of Klambauer et al. (2017)."""
    return _activation("Selu", features, name)


def silu(features, beta: float = 1.0, name: Optional[str] = None) -> Tensor:
    """features * sigmoid(beta * features), also known as swish."""
    x = _floating(features, "silu", "features")
    with name_scope(name, "swish", [x]) as scope:
        scaled = x if beta == 1.0 else x * _scalar(beta, x)
        return math_ops.multiply(x, math_ops.sigmoid(scaled), name=scope)


swish = silu


def gelu(features, approximate: bool = False, name: Optional[str] = None) -> Tensor:
    """Gaussian error linear unit x * P(X <= x), X ~ N(0, 1); tanh approximation optional."""
    x = _floating(features, "gelu", "features")
    with name_scope(name, "Gelu", [x]) as scope:
        half_x = x * _scalar(0.5, x)
        if approximate:
            cubic = x + _scalar(0.044715, x) * x * x * x
            inner = math_ops.tanh(_scalar(np.sqrt(2 / np.pi), x) * cubic)
        else:
            inner = math_ops.erf(x * _scalar(np.sqrt(0.5), x))
        return math_ops.multiply(half_x, _scalar(1, x) + inner, name=scope)


# --------------------------------------------------------------------------- softmax
def _log_softmax_array(x: np.ndarray, axis: int) -> np.ndarray:
    shifted = x - np.max(x, axis=axis, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))


def _softmax_array(x: np.ndarray, axis: int) -> np.ndarray:
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def _infer_softmax(inputs, attrs):
    x = inputs[0]
    ndims = x.shape.ndims
    if ndims == 0:
        raise ValueError(f"Shape must be at least rank 1 but is rank 0 for softmax of "
                         f"{x.name}")
    axis = attrs["axis"]
    if ndims is not None and not -ndims <= axis < ndims:
        raise errors.InvalidArgumentError(
            None, None, f"`dim` must be in the range [-{ndims}, {ndims}) where {ndims} is "
            f"the number of dimensions in the input. Received: dim={axis} ({x.name})")
    return [(x.dtype, x.shape)]


define_op("Softmax", infer=_infer_softmax, kernel=lambda x, *, axis: _softmax_array(x, axis))
define_op("LogSoftmax", infer=_infer_softmax,
          kernel=lambda x, *, axis: _log_softmax_array(x, axis))


def _softmax_backward(p: Tensor, grad: Tensor, axis: int = -1) -> Tensor:
    """The softmax Jacobian (at output ``p``) applied to ``grad``: p * (g - <g, p>)."""
    return (grad - math_ops.reduce_sum(grad * p, axis, keepdims=True)) * p


@RegisterGradient("Softmax")
def _softmax_grad(op, grad):
    return _softmax_backward(op.outputs[0], grad, op.get_attr("axis"))


@RegisterGradient("LogSoftmax")
def _log_softmax_grad(op, grad):
    """g - softmax * sum(g) along the axis."""
    axis = op.get_attr("axis")
    return grad - math_ops.exp(op.outputs[0]) * math_ops.reduce_sum(grad, axis, keepdims=True)


def _softmax_op(op_type: str, logits, axis, name, dim) -> Tensor:
    x = convert_to_tensor(logits, name="logits")
    check_dtype_in(x, FLOATING, op_type, "logits")
    return apply_op(op_type, [x], name=name or op_type, axis=int(_axis_alias(axis, dim, -1)))


def softmax(logits, axis: Optional[int] = None, name: Optional[str] = None,
            dim: Optional[int] = None) -> Tensor:
    """exp(logits) / sum(exp(logits)) along ``axis`` (default: the last), computed stably."""
    return _softmax_op("Softmax", logits, axis, name, dim)


def log_softmax(logits, axis: Optional[int] = None, name: Optional[str] = None,
                dim: Optional[int] = None) -> Tensor:
    """logits - log(sum(exp(logits))) along ``axis``; finite even at extreme logits."""
    return _softmax_op("LogSoftmax", logits, axis, name, dim)


# -------------------------------------------------------------------- cross entropies
def _infer_softmax_xent(inputs, attrs):
    logits, labels = inputs
    op_type = "SoftmaxCrossEntropyWithLogits"
    _check_rank(logits, 1, op_type, "logits", at_least=True)
    _check_same_dtype(labels, logits, op_type, "labels", "logits")
    if not logits.shape.is_compatible_with(labels.shape):
        raise ValueError(f"logits and labels must have the same shape, but logits "
                         f"({logits.name}) has shape {logits.shape} and labels "
                         f"({labels.name}) has shape {labels.shape}")
    shape = logits.shape.merge_with(labels.shape)
    return [(logits.dtype, shape[:-1]), (logits.dtype, shape)]


def _softmax_xent_kernel(logits, labels):
    log_p = _log_softmax_array(logits, -1)
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
            d_logits = d_logits + mass * _softmax_backward(p, grad_backprop)
        if d_labels is not None:
            along_p = math_ops.reduce_sum(grad_backprop * p, -1, keepdims=True)
            d_labels = d_labels + along_p - grad_backprop
    return d_logits, d_labels


def _infer_sparse_xent(inputs, attrs):
    logits, labels = inputs
    op_type = "SparseSoftmaxCrossEntropyWithLogits"
    check_dtype_in(labels, _INDEX_TYPES, op_type, "labels")
    _check_rank(logits, 1, op_type, "logits", at_least=True)
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
    log_p = _log_softmax_array(logits, -1)
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
        d_logits = d_logits + _softmax_backward(softmax(op.inputs[0]), grad_backprop)
    return d_logits, None


def _loss_operands(labels, logits, op_type: str) -> tuple[Tensor, Tensor]:
    """Both as tensors; labels given as Python or NumPy values take the logits' dtype."""
    logits_t = _floating(logits, op_type, "logits")
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


def softmax_cross_entropy_with_logits_v2(labels, logits, axis: Optional[int] = None,
                                         name: Optional[str] = None,
                                         dim: Optional[int] = None) -> Tensor:
    """-sum(labels * log_softmax(logits)) along ``axis``; differentiable in both arguments."""
    axis = _axis_alias(axis, dim, -1)
    with name_scope(name, "softmax_cross_entropy_with_logits", [logits, labels]) as scope:
        labels_t, logits_t = _loss_operands(labels, logits, "SoftmaxCrossEntropyWithLogits")
        loss, _ = apply_op("SoftmaxCrossEntropyWithLogits",
                           [_logits_last(logits_t, axis), _logits_last(labels_t, axis)],
                           name=scope)
        return loss


def softmax_cross_entropy_with_logits(labels=None, logits=None, dim: int = -1,
                                      name: Optional[str] = None,
                                      axis: Optional[int] = None) -> Tensor:
    """TF1's deprecated form: like the v2 op, but no gradient flows into ``labels``."""
    if labels is None or logits is None:
        raise ValueError("Both labels and logits must be provided.")
    axis = _axis_alias(axis, None if dim == -1 else dim, -1)
    with name_scope(name, "softmax_cross_entropy_with_logits_sg", [logits, labels]):
        labels_t, logits_t = _loss_operands(labels, logits, "SoftmaxCrossEntropyWithLogits")
        labels_t = array.stop_gradient(labels_t, name="labels_stop_gradient")
        return softmax_cross_entropy_with_logits_v2(labels=labels_t, logits=logits_t,
                                                    axis=axis)


def sparse_softmax_cross_entropy_with_logits(labels=None, logits=None,
                                             name: Optional[str] = None) -> Tensor:
    """-log_softmax(logits)[labels]; labels are class indices (out of range: an error)."""
    if labels is None or logits is None:
        raise ValueError("Both labels and logits must be provided.")
    with name_scope(name, "SparseSoftmaxCrossEntropyWithLogits", [logits, labels]) as scope:
        logits_t = _floating(logits, "SparseSoftmaxCrossEntropyWithLogits", "logits")
        labels_t = as_tensor(labels, name="labels", like=logits_t)
        loss, _ = apply_op("SparseSoftmaxCrossEntropyWithLogits", [logits_t, labels_t],
                           name=scope)
        return loss


def _infer_sigmoid_xent(inputs, attrs):
    logits, labels = inputs
    _check_same_dtype(labels, logits, "SigmoidCrossEntropyWithLogits", "labels", "logits")
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
    _check_same_dtype(labels_t, logits_t, op_type, "labels", "logits")
    _check_same_shape(logits_t, labels_t)
    return labels_t, logits_t


def sigmoid_cross_entropy_with_logits(labels=None, logits=None,
                                      name: Optional[str] = None) -> Tensor:
    """Elementwise -z log(sigmoid(x)) - (1 - z) log(1 - sigmoid(x)), computed stably."""
    if labels is None or logits is None:
        raise ValueError("Both labels and logits must be provided.")
    with name_scope(name, "logistic_loss", [logits, labels]) as scope:
        labels_t, logits_t = _loss_operands(labels, logits, "SigmoidCrossEntropyWithLogits")
        return apply_op("SigmoidCrossEntropyWithLogits", [logits_t, labels_t], name=scope)


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
        one = _scalar(1, x)
        log_weight = one + (q - one) * z
        return math_ops.add((one - z) * x, log_weight * math_ops.softplus(-x), name=scope)


define_op("L2Loss", infer=lambda inputs, attrs: [(inputs[0].dtype, TensorShape([]))],
          kernel=lambda x: np.asarray(np.sum(np.square(x)) / 2, dtype=x.dtype))


@RegisterGradient("L2Loss")
def _l2_loss_grad(op, grad):
    return op.inputs[0] * grad


def l2_loss(t, name: Optional[str] = None) -> Tensor:
    """sum(t ** 2) / 2, a scalar."""
    return apply_op("L2Loss", [_floating(t, "L2Loss", "t")], name=name or "L2Loss")


# --------------------------------------------------------------------- normalisation
def l2_normalize(x, axis=None, epsilon: float = 1e-12, name: Optional[str] = None,
                 dim=None) -> Tensor:
    """x / sqrt(max(sum(x ** 2, axis), epsilon))."""
    axis = _axis_alias(axis, dim)
    with name_scope(name, "l2_normalize", [x]) as scope:
        x = _floating(x, "l2_normalize", "x")
        square_sum = math_ops.reduce_sum(math_ops.square(x), axis, keepdims=True)
        inverse_norm = math_ops.rsqrt(math_ops.maximum(square_sum, _scalar(epsilon, x)))
        return math_ops.multiply(x, inverse_norm, name=scope)


def moments(x, axes, shift=None, name: Optional[str] = None, keep_dims=None,
            keepdims=None) -> tuple[Tensor, Tensor]:
    """Mean and (biased) variance of ``x`` over ``axes``; float16 is summed in float32."""
    if keep_dims is not None and keepdims is not None:
        raise ValueError("Cannot specify both 'keep_dims' and 'keepdims'.")
    keep = bool(keepdims if keepdims is not None else keep_dims)
    with name_scope(name, "moments", [x, axes]):
        x = _floating(x, "moments", "x")
        y = math_ops.cast(x, dtypes.float32) if x.dtype is dtypes.float16 else x
        mean = math_ops.reduce_mean(y, axes, keepdims=True, name="mean")
        # Not stop_gradient(mean) as TF does: that would make second derivatives wrong.
        variance = math_ops.reduce_mean(math_ops.squared_difference(y, mean), axes,
                                        keepdims=True, name="variance")
        if not keep:
            squeezed = [axes] if isinstance(axes, int) else list(axes)
            mean = array.squeeze(mean, squeezed)
            variance = array.squeeze(variance, squeezed)
        return math_ops.cast(mean, x.dtype), math_ops.cast(variance, x.dtype)


def batch_normalization(x, mean, variance, offset, scale, variance_epsilon: float,
                        name: Optional[str] = None) -> Tensor:
    """scale * (x - mean) / sqrt(variance + epsilon) + offset (offset/scale may be None)."""
    with name_scope(name, "batchnorm", [x, mean, variance, scale, offset]) as scope:
        x = _floating(x, "batch_normalization", "x")
        mean = as_tensor(mean, dtype=None if isinstance(mean, Tensor) else x.dtype, like=x)
        variance, scale, offset = (None if v is None else as_tensor(
            v, dtype=None if isinstance(v, Tensor) else mean.dtype, like=x)
            for v in (variance, scale, offset))
        inv = math_ops.rsqrt(variance + _scalar(variance_epsilon, variance))
        if scale is not None:
            inv = inv * scale
        shift = -mean * inv if offset is None else offset - mean * inv
        return math_ops.add(x * math_ops.cast(inv, x.dtype), math_ops.cast(shift, x.dtype),
                            name=scope)


_MIN_FUSED_EPSILON = 1.001e-5  # the smallest epsilon TF's fused kernels accept


def _channel_vector(value, name: str, dtype: dtypes.DType, channels: Optional[int],
                    like: Tensor) -> Tensor:
    t = as_tensor(value, dtype=None if isinstance(value, Tensor) else dtype, name=name,
                  like=like)
    if t.dtype is not dtype:
        raise TypeError(f"fused_batch_norm: '{name}' ({t.name}) must be {dtype.name}, got "
                        f"{t.dtype.name}")
    _check_rank(t, 1, "FusedBatchNorm", name)
    size = t.shape.as_tuple()[0] if t.shape.ndims == 1 else None
    if size is not None and channels is not None and size != channels:
        raise ValueError(f"fused_batch_norm: '{name}' ({t.name}) must have {channels} "
                         f"entries (the channels of x), got shape {t.shape}")
    return t


def fused_batch_norm(x, scale, offset, mean=None, variance=None, epsilon: float = 0.001,
                     data_format: str = "NHWC", is_training: bool = True,
                     name: Optional[str] = None, exponential_avg_factor: float = 1.0):
    """Batch normalisation of a 4-D ``x`` per channel; returns (y, mean, variance).

    Training normalises with the batch statistics and returns the batch mean and the
    unbiased batch variance (blended into ``mean``/``variance`` when
    ``exponential_avg_factor`` != 1); inference uses and returns ``mean``/``variance``.
    """
    if (not is_training or exponential_avg_factor != 1.0) and (mean is None or variance is None):
        raise ValueError("Both `mean` and `variance` must be a 1D tensor when `is_training` "
                         "is False or `exponential_avg_factor` != 1.0. Received: `mean` "
                         f"{mean!r} and `variance` {variance!r}")
    if data_format not in ("NHWC", "NCHW"):
        raise ValueError(f"fused_batch_norm: data_format must be 'NHWC' or 'NCHW', got "
                         f"{data_format!r}")
    with name_scope(name, "FusedBatchNorm", [x, scale, offset]):
        x = _floating(x, "FusedBatchNorm", "x")
        _check_rank(x, 4, "FusedBatchNorm", "x")
        channel_axis = 3 if data_format == "NHWC" else 1
        channels = x.shape.as_tuple()[channel_axis] if x.shape.ndims == 4 else None
        param_dtype = dtypes.float32 if x.dtype.size <= 2 else x.dtype
        params = {key: _channel_vector(value, key, param_dtype, channels, x)
                  for key, value in (("scale", scale), ("offset", offset), ("mean", mean),
                                     ("variance", variance)) if value is not None}
        broadcast = [1, 1, 1, -1] if data_format == "NHWC" else [1, -1, 1, 1]
        xu = math_ops.cast(x, param_dtype)
        if is_training:
            axes = [0, 1, 2] if data_format == "NHWC" else [0, 2, 3]
            batch_mean, batch_variance = moments(xu, axes)
        else:
            batch_mean, batch_variance = params["mean"], params["variance"]
        y = batch_normalization(xu, array.reshape(batch_mean, broadcast),
                                array.reshape(batch_variance, broadcast),
                                array.reshape(params["offset"], broadcast),
                                array.reshape(params["scale"], broadcast),
                                max(epsilon, _MIN_FUSED_EPSILON))
        y = math_ops.cast(y, x.dtype)
        if not is_training:
            return y, array.identity(batch_mean), array.identity(batch_variance)
        batch_variance = batch_variance * _bessel_correction(x, channel_axis, param_dtype)
        if exponential_avg_factor != 1.0:
            factor = _scalar(exponential_avg_factor, batch_mean)
            keep = _scalar(1.0 - exponential_avg_factor, batch_mean)
            batch_mean = keep * params["mean"] + factor * batch_mean
            batch_variance = keep * params["variance"] + factor * batch_variance
        return y, batch_mean, batch_variance


def _bessel_correction(x: Tensor, channel_axis: int, dtype: dtypes.DType) -> Tensor:
    """n / (n - 1) for the n values averaged per channel (1 when n == 1)."""
    count = math_ops.cast(array.size(x), dtype) / math_ops.cast(
        array.gather_dim(x, channel_axis), dtype)
    one = constant(1, dtype=dtype)
    return count / math_ops.maximum(count - one, one)


# ------------------------------------------------------------------------- bias_add
def _channels_first(data_format: str) -> bool:
    return data_format.startswith("NC")


def _infer_bias_add(inputs, attrs):
    value, bias = inputs
    _check_same_dtype(bias, value, "BiasAdd", "bias", "value")
    _check_rank(bias, 1, "BiasAdd", "bias")
    _check_rank(value, 2, "BiasAdd", "value", at_least=True)
    dims = value.shape.as_tuple()
    if dims is not None and bias.shape.ndims == 1:
        axis = 1 if _channels_first(attrs["data_format"]) else -1
        have, want = bias.shape.as_tuple()[0], dims[axis]
        if have is not None and want is not None and have != want:
            raise ValueError(f"Dimensions must be equal, but are {want} and {have} for "
                             f"'BiasAdd' with input shapes: {value.shape} ({value.name}), "
                             f"{bias.shape} ({bias.name})")
    return [(value.dtype, value.shape)]


def _bias_add_kernel(value, bias, *, data_format):
    if _channels_first(data_format):
        bias = bias.reshape((-1,) + (1,) * (value.ndim - 2))
    return value + bias


def _bias_add_grad_kernel(grad, *, data_format):
    if _channels_first(data_format):
        return np.sum(grad, axis=(0, *range(2, grad.ndim)), dtype=grad.dtype)
    channels = grad.shape[-1]
    return _column_sums(grad.reshape(grad.size // channels if channels else 0, channels))


_FOLD_MIN_ROWS = 1024


def _column_sums(rows: np.ndarray) -> np.ndarray:
    """The sum of an [R, C] array over R. Tall arrays are folded in halves: each add then
    runs over long contiguous blocks (``np.add.reduce`` over axis 0 adds one short row at
    a time) and rounding errors grow with log R rather than R."""
    if len(rows) < _FOLD_MIN_ROWS:
        return np.add.reduce(rows, axis=0, dtype=rows.dtype)
    buffer = None  # the first fold allocates it; the later ones fold within it
    while len(rows) > 1:
        half = len(rows) // 2
        top = np.add(rows[:half], rows[half:2 * half],
                     out=None if buffer is None else rows[:half])
        if len(rows) % 2:
            top[-1] += rows[-1]
        rows = buffer = top
    return rows[0]


def _infer_bias_add_grad(inputs, attrs):
    grad = inputs[0]
    dims = grad.shape.as_tuple()
    channels = None if dims is None else dims[1 if _channels_first(attrs["data_format"]) else -1]
    return [(grad.dtype, TensorShape([channels]))]


define_op("BiasAdd", infer=_infer_bias_add, kernel=_bias_add_kernel)
define_op("BiasAddGrad", infer=_infer_bias_add_grad, kernel=_bias_add_grad_kernel)


@RegisterGradient("BiasAdd")
def _bias_add_grad(op, grad):
    d_bias = apply_op("BiasAddGrad", [grad], name="BiasAddGrad",
                      data_format=op.get_attr("data_format")) \
        if gradient_needed(op.inputs[1]) else None
    return grad, d_bias


@RegisterGradient("BiasAddGrad")
def _bias_add_grad_grad(op, grad):
    """Broadcasts the bias-shaped gradient back over the summed axes."""
    upstream = op.inputs[0]
    upstream_shape = array.shape_of_input(upstream)
    if _channels_first(op.get_attr("data_format")):
        trailing = array.ones_like(upstream_shape)[2:]
        grad = array.reshape(grad, array.concat([constant([-1]), trailing], 0))
    return array.broadcast_to(grad, upstream_shape)


def bias_add(value, bias, data_format: Optional[str] = None,
             name: Optional[str] = None) -> Tensor:
    """Adds a 1-D ``bias`` along the channel axis of ``value`` (last, or 1 for NC...)."""
    data_format = data_format or "NHWC"
    if not (data_format.startswith("NC") or data_format.endswith("C")):
        raise ValueError(f"data_format must put channels last or second (e.g. 'NHWC' or "
                         f"'NCHW'), got {data_format!r}")
    with name_scope(name, "BiasAdd", [value, bias]) as scope:
        value_t = convert_to_tensor(value, name="input")
        check_dtype_in(value_t, REAL_NUMERIC, "BiasAdd", "value")
        bias_t = as_tensor(bias, dtype=None if isinstance(bias, Tensor) else value_t.dtype,
                           name="bias", like=value_t)
        return apply_op("BiasAdd", [value_t, bias_t], name=scope, data_format=data_format)


def xw_plus_b(x, weights, biases, name: Optional[str] = None) -> Tensor:
    """matmul(x, weights) + biases."""
    with name_scope(name, "xw_plus_b", [x, weights, biases]) as scope:
        return bias_add(math_ops.matmul(x, weights), biases, name=scope)


# -------------------------------------------------------------------------- dropout
def _check_rate(rate) -> None:
    if not 0 <= rate < 1:
        raise ValueError(f"`rate` must be a scalar tensor or a float in the range [0, 1). "
                         f"Received: rate={rate}")


def _noise_shape(x: Tensor, noise_shape):
    """``noise_shape`` with its None entries taken from ``x``'s static shape."""
    if noise_shape is None:
        return array.shape(x)
    if isinstance(noise_shape, Tensor) or None not in list(noise_shape):
        return noise_shape
    dims = x.shape.as_tuple()
    if dims is None or len(dims) != len(noise_shape):
        raise ValueError(f"noise_shape {noise_shape} has unknown entries that cannot be "
                         f"taken from x ({x.name}) of shape {x.shape}")
    return [d if n is None else n for n, d in zip(noise_shape, dims)]


def dropout(x, keep_prob=None, noise_shape=None, seed: Optional[int] = None,
            name: Optional[str] = None, rate=None) -> Tensor:
    """Zeroes each element with probability ``rate`` (= 1 - keep_prob), scaling the rest
    by 1 / (1 - rate) so the expected value is unchanged."""
    if keep_prob is not None:
        if rate is not None:
            raise ValueError("Cannot specify both 'keep_prob' and 'rate'.")
        rate = 1 - keep_prob
    if rate is None:
        raise ValueError("`rate` must be provided. Received: rate=None")
    x = convert_to_tensor(x, name="x")
    if not x.dtype.is_floating:
        raise ValueError(f"`x.dtype` must be a floating point tensor as `x` will be scaled. "
                         f"Received: x_dtype={x.dtype!r}")
    if not isinstance(rate, Tensor):
        _check_rate(rate)
        if rate == 0:
            return x
    with name_scope(name, "dropout", [x]) as scope:
        rate_t = as_tensor(rate, dtype=None if isinstance(rate, Tensor) else x.dtype,
                           name="rate", like=x)
        noise = random_uniform(_noise_shape(x, noise_shape), seed=seed, dtype=x.dtype)
        keep = math_ops.cast(math_ops.greater_equal(noise, rate_t), x.dtype)
        scale = _scalar(1, x) / (_scalar(1, x) - rate_t)
        return math_ops.multiply(x * scale, keep, name=scope)


# ------------------------------------------------------------ sliding-window geometry
class _Window(NamedTuple):
    """One spatial axis of a sliding-window op.

    Output position ``o`` reads the padded input at ``o * stride + t * dilation`` for
    taps ``t < size``; ``before``/``after`` is the padding added around the input.
    """

    size: int
    stride: int
    dilation: int
    before: int
    after: int
    out: int

    @property
    def span(self) -> int:
        """How many consecutive padded-input positions one window covers."""
        return _span(self.size, self.dilation)

    def reads(self, tap: int) -> slice:
        """The padded-input positions tap ``tap`` reads, one per output position."""
        start = tap * self.dilation
        return slice(start, start + self.stride * (self.out - 1) + 1, self.stride)


def _span(size: int, dilation: int) -> int:
    return (size - 1) * dilation + 1


def _fit_window(in_size: int, size: int, stride: int, dilation: int, padding: str,
                explicit: tuple[int, int]) -> _Window:
    span = _span(size, dilation)
    if padding == "SAME":
        out = -(-in_size // stride)
        total = max((out - 1) * stride + span - in_size, 0)
        return _Window(size, stride, dilation, total // 2, total - total // 2, out)
    before, after = explicit
    padded = in_size + before + after
    if padded < span:
        raise ValueError(f"Negative dimension size caused by subtracting {span} from {padded}")
    return _Window(size, stride, dilation, before, after, (padded - span) // stride + 1)


class _WindowSpec:
    """The attrs of a 2-D convolution or pooling op, read in NHWC terms."""

    def __init__(self, attrs: dict):
        data_format = attrs["data_format"]
        if data_format not in ("NHWC", "NCHW"):
            raise ValueError(f"data_format must be 'NHWC' or 'NCHW', got {data_format!r}")
        self.channels_last = data_format == "NHWC"
        self.spatial = (1, 2) if self.channels_last else (2, 3)
        self.padding = attrs["padding"]
        if self.padding not in ("SAME", "VALID", "EXPLICIT"):
            raise ValueError(f"Attr 'padding' passed string '{self.padding}' not in: "
                             "\"SAME\", \"VALID\", \"EXPLICIT\".")
        self.strides = self._spatial_entries(attrs["strides"], "strides")
        self.dilations = self._spatial_entries(attrs.get("dilations", [1] * 4), "dilations")
        ksize = attrs.get("ksize")
        self.ksize = None if ksize is None else self._spatial_entries(ksize, "ksize")
        pads = attrs.get("explicit_paddings") or [0] * 8
        if self.padding == "EXPLICIT" and len(pads) != 8:
            raise ValueError(f"explicit_paddings must hold 8 values (4 [before, after] pairs), "
                             f"got {list(pads)}")
        self.explicit = tuple((pads[2 * a], pads[2 * a + 1]) for a in self.spatial)

    def _spatial_entries(self, values: Sequence[int], arg: str) -> tuple[int, int]:
        values = list(values)
        outer = [values[a] for a in range(4) if a not in self.spatial] if len(values) == 4 \
            else None
        if outer != [1, 1] or min(values) < 1:
            raise ValueError(f"{arg} must hold 4 positive values with 1 in the batch and "
                             f"channel dimensions (pooling, strides and dilations across them "
                             f"are not supported), got {values}")
        return values[self.spatial[0]], values[self.spatial[1]]

    def windows(self, in_hw: Sequence[int], size_hw: Sequence[int]) -> tuple[_Window, _Window]:
        return tuple(_fit_window(n, k, s, d, self.padding, e) for n, k, s, d, e in zip(
            in_hw, size_hw, self.strides, self.dilations, self.explicit))

    def out_hw(self, in_hw: Sequence, size_hw: Sequence, context: str) -> list[Optional[int]]:
        """Static output height and width (None where an input size is unknown)."""
        result = []
        for n, k, s, d, e in zip(in_hw, size_hw, self.strides, self.dilations, self.explicit):
            if n is None or k is None:
                result.append(None)
                continue
            try:
                result.append(_fit_window(n, k, s, d, self.padding, e).out)
            except ValueError as err:
                raise ValueError(f"{err} for {context}") from None
        return result

    def nhwc(self, dims: Sequence) -> tuple:
        return tuple(dims) if self.channels_last else (dims[0], dims[2], dims[3], dims[1])

    def layout(self, n, h, w, c) -> tuple:
        return (n, h, w, c) if self.channels_last else (n, c, h, w)

    def to_nhwc(self, x: np.ndarray) -> np.ndarray:
        return x if self.channels_last else x.transpose(0, 2, 3, 1)

    def from_nhwc(self, x: np.ndarray) -> np.ndarray:
        return x if self.channels_last else x.transpose(0, 3, 1, 2)


def _checked_spec(attrs: dict, op_type: str, t: Tensor) -> _WindowSpec:
    """The op's window attrs, or a ValueError naming the op type and its input."""
    try:
        return _WindowSpec(attrs)
    except ValueError as err:
        raise ValueError(f"{err} ('{op_type}' of {t.name})") from None


def _nhwc_dims(spec: _WindowSpec, t: Tensor) -> tuple:
    dims = t.shape.as_tuple()
    return (None,) * 4 if dims is None else spec.nhwc(dims)


def _shape_from_sizes(sizes: Tensor, op_type: str) -> TensorShape:
    check_dtype_in(sizes, _INDEX_TYPES, op_type, "sizes")
    values = static_ints(sizes)
    return TensorShape([None] * 4) if values is None else TensorShape(values)


def _padded(x: np.ndarray, windows: Sequence[_Window], pad_value=0) -> np.ndarray:
    """NHWC ``x`` with the windows' padding around its spatial axes."""
    h, w = windows
    if h.before or h.after or w.before or w.after:
        x = np.pad(x, ((0, 0), (h.before, h.after), (w.before, w.after), (0, 0)),
                   constant_values=pad_value)
    return x


def _taps(padded: np.ndarray, windows: Sequence[_Window]):
    """``(tap, view)`` per filter tap: the [N, Ho, Wo, C] view of the padded input that
    tap reads, one position per output position (taps numbered row by row)."""
    h, w = windows
    for i in range(h.size):
        for j in range(w.size):
            yield i * w.size + j, padded[:, h.reads(i), w.reads(j)]


def _patches(x: np.ndarray, windows: Sequence[_Window], pad_value=0) -> np.ndarray:
    """Every output position's receptive field of NHWC ``x``: an [N, Ho, Wo, C, kh, kw] view."""
    h, w = windows
    view = sliding_window_view(_padded(x, windows, pad_value), (h.span, w.span), axis=(1, 2))
    return view[:, :h.stride * (h.out - 1) + 1:h.stride, :w.stride * (w.out - 1) + 1:w.stride,
                :, ::h.dilation, ::w.dilation]


def _im2col(x: np.ndarray, windows: Sequence[_Window]) -> np.ndarray:
    """The receptive fields of NHWC ``x`` as a contiguous [N*Ho*Wo, kh*kw*C] matrix, each
    row ordered (tap row, tap column, channel) like an HWIO filter's rows, so that a
    convolution is one matrix product."""
    h, w = windows
    n, channels = x.shape[0], x.shape[3]
    rows, row_size = n * h.out * w.out, h.size * w.size * channels
    if channels == 1:  # copying tap by tap moves runs of Wo values instead of single ones
        cols = np.empty((n, h.out, w.out, h.size * w.size), x.dtype)
        for tap, view in _taps(_padded(x, windows), windows):
            cols[..., tap] = view[..., 0]
        return cols.reshape(rows, row_size)
    return np.ascontiguousarray(_patches(x, windows).transpose(0, 1, 2, 4, 5, 3)).reshape(
        rows, row_size)


def _accumulate_taps(tap_value: Callable, windows: Sequence[_Window], in_shape: Sequence[int],
                     dtype) -> np.ndarray:
    """The NHWC input-shaped sum over taps of ``tap_value(tap)`` ([N, Ho, Wo, C]), each
    added where that tap reads: the adjoint of ``_taps``."""
    h, w = windows
    n, height, width, channels = in_shape
    padded = np.zeros((n, height + h.before + h.after, width + w.before + w.after, channels),
                      dtype)
    for tap, view in _taps(padded, windows):
        view += tap_value(tap)
    return padded[:, h.before:h.before + height, w.before:w.before + width]


def _window_list(value, arg: str, data_format: str) -> list[int]:
    """An int or a list of 1, 2 or 4 ints as the 4 per-dimension values of ``data_format``."""
    values = [value] if isinstance(value, (int, np.integer)) else list(value)
    if len(values) == 1:
        values = values * 2
    if len(values) == 2:
        h, w = values
        values = [1, h, w, 1] if data_format == "NHWC" else [1, 1, h, w]
    elif len(values) != 4:
        raise ValueError(f"{arg} should be of length 1, 2 or 4. Received: {arg}={value} of "
                         f"length {len(values)}")
    return [int(v) for v in values]


def _padding_attrs(padding, data_format: str, op_type: str, explicit_ok: bool = True) -> dict:
    """``padding`` ('SAME', 'VALID' or 4 [before, after] pairs) as op attrs."""
    if isinstance(padding, str):
        if padding not in ("SAME", "VALID"):
            allowed = '"SAME", "VALID", "EXPLICIT"' if explicit_ok else '"SAME", "VALID"'
            raise ValueError(f"Attr 'padding' of '{op_type}' Op passed string '{padding}' not "
                             f"in: {allowed}.")
        return {"padding": padding, "explicit_paddings": []}
    pairs = [list(p) for p in padding] if explicit_ok and padding is not None else []
    if len(pairs) != 4 or any(len(p) != 2 for p in pairs):
        raise ValueError(f"padding of '{op_type}' must be 'SAME', 'VALID' or a list of 4 "
                         f"[before, after] pairs, got {padding!r}")
    outer = (0, 3) if data_format == "NHWC" else (0, 1)
    if any(pairs[a] != [0, 0] for a in outer):
        raise ValueError(f"padding of '{op_type}' must be 0 in the batch and channel "
                         f"dimensions, got {padding!r}")
    return {"padding": "EXPLICIT", "explicit_paddings": [int(v) for p in pairs for v in p]}


def _alias(arg: str, value, other: str, other_value):
    """One of two spellings of an argument (TF renamed several, keeping both)."""
    if value is not None and other_value is not None:
        raise ValueError(f"Cannot specify both '{arg}' and '{other}'.")
    if value is None and other_value is None:
        raise ValueError(f"'{arg}' must be provided.")
    return value if value is not None else other_value


# ---------------------------------------------------------------------- convolutions
class _ConvKind(NamedTuple):
    """How a convolution family contracts receptive fields with its filter (NHWC arrays,
    HWIO filters, ``windows`` from ``_WindowSpec.windows``)."""

    forward: Callable          # (x, filter, windows) -> [N, Ho, Wo, C_out]
    backprop_input: Callable   # (dy, filter, windows, input shape) -> input-shaped
    backprop_filter: Callable  # (x, dy, windows) -> filter-shaped
    out_channels: Callable     # (static filter dims) -> Optional[int]


def _as_rows(a: np.ndarray) -> np.ndarray:
    """[N, H, W, C] as an [N*H*W, C] matrix."""
    n, height, width, channels = a.shape
    return a.reshape(n * height * width, channels)


def _filter_matrix(w: np.ndarray) -> np.ndarray:
    """An HWIO filter as the [kh*kw*C_in, C_out] matrix ``_im2col`` rows multiply."""
    kh, kw, c_in, c_out = w.shape
    return w.reshape(kh * kw * c_in, c_out)


def _conv_forward(x: np.ndarray, w: np.ndarray, windows) -> np.ndarray:
    h, wd = windows
    return (_im2col(x, windows) @ _filter_matrix(w)).reshape(
        x.shape[0], h.out, wd.out, w.shape[3])


def _conv_backprop_input(dy: np.ndarray, w: np.ndarray, windows, in_shape) -> np.ndarray:
    """At stride 1 the input gradient is a convolution too: of ``dy``, padded so that its
    windows end on every input position, with the filter turned by 180 degrees and its
    channel axes swapped. Strided, that would multiply mostly zeros: there each
    receptive field's gradient comes from one product and is added back where it read."""
    if all(win.stride == 1 for win in windows):
        cropped, full_windows = _full_correlation(dy, windows, in_shape[1:3])
        return _conv_forward(cropped, w[::-1, ::-1].transpose(0, 1, 3, 2), full_windows)
    kh, kw, c_in, _ = w.shape
    fields = (_as_rows(dy) @ _filter_matrix(w).T).reshape(dy.shape[:3] + (kh * kw, c_in))
    return _accumulate_taps(lambda tap: fields[:, :, :, tap], windows, in_shape, dy.dtype)


def _full_correlation(dy: np.ndarray, windows, in_hw) -> tuple:
    """Stride-1 windows over ``dy`` with one output per input position, and ``dy``
    cropped where their padding would be negative (outputs that read only padding)."""
    crops, full_windows = [], []
    for win, size in zip(windows, in_hw):
        reach = (win.size - 1) * win.dilation
        before = reach - win.before
        after = size + reach - before - win.out
        crops.append(slice(max(-before, 0), win.out - max(-after, 0)))
        full_windows.append(_Window(win.size, 1, win.dilation, max(before, 0), max(after, 0),
                                    size))
    return dy[:, crops[0], crops[1]], tuple(full_windows)


def _conv_backprop_filter(x: np.ndarray, dy: np.ndarray, windows) -> np.ndarray:
    h, w = windows
    return (_im2col(x, windows).T @ _as_rows(dy)).reshape(
        h.size, w.size, x.shape[3], dy.shape[3])


def _per_multiplier(dy: np.ndarray, channels: int) -> np.ndarray:
    """Depthwise outputs [N,Ho,Wo,C*M] viewed as [N,Ho,Wo,C,M]."""
    return dy.reshape(dy.shape[:3] + (channels, -1))


def _depthwise_forward(x: np.ndarray, w: np.ndarray, windows) -> np.ndarray:
    h, wd = windows
    per_multiplier = np.einsum("nhwcij,ijcm->nhwcm", _patches(x, windows), w)
    return per_multiplier.reshape(x.shape[0], h.out, wd.out, w.shape[2] * w.shape[3])


def _depthwise_backprop_input(dy: np.ndarray, w: np.ndarray, windows,
                              in_shape) -> np.ndarray:
    per_tap = w.reshape((-1,) + w.shape[2:])  # [kh*kw, C, M]
    per_multiplier = _per_multiplier(dy, w.shape[2])
    return _accumulate_taps(lambda tap: np.einsum("nhwcm,cm->nhwc", per_multiplier,
                                                  per_tap[tap]),
                            windows, in_shape, dy.dtype)


_CONV = _ConvKind(forward=_conv_forward, backprop_input=_conv_backprop_input,
                  backprop_filter=_conv_backprop_filter, out_channels=lambda dims: dims[3])
_DEPTHWISE = _ConvKind(
    forward=_depthwise_forward,
    backprop_input=_depthwise_backprop_input,
    backprop_filter=lambda x, dy, windows: np.einsum(
        "nhwcij,nhwcm->ijcm", _patches(x, windows), _per_multiplier(dy, x.shape[3])),
    out_channels=lambda dims: None if None in dims[2:] else dims[2] * dims[3])


def _conv_output_shape(kind: _ConvKind, spec: _WindowSpec, x_shape: TensorShape,
                       w_shape: TensorShape, op_type: str) -> TensorShape:
    """The static output shape of convolving ``x_shape`` with ``w_shape``."""
    n, h, w, c = (None,) * 4 if x_shape.ndims is None else spec.nhwc(x_shape.as_tuple())
    kh, kw, ci, m = w_shape.as_tuple() or (None,) * 4
    context = f"'{op_type}' with input shapes: {x_shape}, {w_shape}"
    if c is not None and ci is not None and c != ci:
        raise ValueError(f"Depth of input ({c}) does not match the input depth of the filter "
                         f"({ci}) for {context}")
    oh, ow = spec.out_hw((h, w), (kh, kw), context)
    return TensorShape(spec.layout(n, oh, ow, kind.out_channels((kh, kw, ci, m))))


def _check_conv_operands(first: Tensor, second: Tensor, op_type: str, first_arg: str,
                         second_arg: str) -> None:
    """Both 4-D, of one floating dtype (the second is checked against the first)."""
    check_dtype_in(first, FLOATING, op_type, first_arg)
    _check_same_dtype(second, first, op_type, second_arg, first_arg)
    _check_rank(first, 4, op_type, first_arg)
    _check_rank(second, 4, op_type, second_arg)


def _conv_infers(kind: _ConvKind, base: str) -> tuple[Callable, Callable, Callable]:
    def forward(inputs, attrs):
        x, w = inputs
        _check_conv_operands(x, w, base, "input", "filter")
        spec = _checked_spec(attrs, base, x)
        return [(x.dtype, _conv_output_shape(kind, spec, x.shape, w.shape, base))]

    def backprop_input(inputs, attrs):
        sizes, w, dy = inputs
        op_type = base + "BackpropInput"
        _check_conv_operands(w, dy, op_type, "filter", "out_backprop")
        shape = _shape_from_sizes(sizes, op_type)
        expected = _conv_output_shape(kind, _checked_spec(attrs, op_type, dy), shape, w.shape,
                                      op_type)
        if not expected.is_compatible_with(dy.shape):
            raise ValueError(f"'{op_type}': out_backprop {dy.name} has shape {dy.shape}, but "
                             f"an input of shape {shape} convolved with filter {w.name} of "
                             f"shape {w.shape} has shape {expected}")
        return [(w.dtype, shape)]

    def backprop_filter(inputs, attrs):
        x, sizes, dy = inputs
        op_type = base + "BackpropFilter"
        _check_conv_operands(x, dy, op_type, "input", "out_backprop")
        return [(x.dtype, _shape_from_sizes(sizes, op_type))]

    return forward, backprop_input, backprop_filter


def _conv_kernels(kind: _ConvKind) -> tuple[Callable, Callable, Callable]:
    def forward(x, w, **attrs):
        spec = _WindowSpec(attrs)
        x = spec.to_nhwc(x)
        return spec.from_nhwc(kind.forward(x, w, spec.windows(x.shape[1:3], w.shape[:2])))

    def backprop_input(sizes, w, dy, **attrs):
        spec = _WindowSpec(attrs)
        in_shape = spec.nhwc([int(s) for s in sizes])
        dy = spec.to_nhwc(dy)
        windows = spec.windows(in_shape[1:3], w.shape[:2])
        if dy.shape[1:3] != tuple(win.out for win in windows):
            raise ValueError(f"out_backprop has spatial shape {dy.shape[1:3]}, but the "
                             f"convolution of an input of shape {tuple(sizes)} has "
                             f"{tuple(win.out for win in windows)}")
        return spec.from_nhwc(kind.backprop_input(dy, w, windows, in_shape))

    def backprop_filter(x, sizes, dy, **attrs):
        spec = _WindowSpec(attrs)
        x, dy = spec.to_nhwc(x), spec.to_nhwc(dy)
        windows = spec.windows(x.shape[1:3], [int(s) for s in sizes[:2]])
        return kind.backprop_filter(x, dy, windows)

    return forward, backprop_input, backprop_filter


def _define_conv_family(base: str, kind: _ConvKind) -> None:
    """Defines ``base`` and its backprop ops ``<base>BackpropInput`` (sizes, filter, dy)
    and ``<base>BackpropFilter`` (input, sizes, dy), each differentiable.

    All three are bilinear, so each one's gradient is made of the other two.
    """
    input_type, filter_type = base + "BackpropInput", base + "BackpropFilter"
    for op_type, infer, kernel in zip((base, input_type, filter_type), _conv_infers(kind, base),
                                      _conv_kernels(kind)):
        define_op(op_type, infer=infer, kernel=kernel)

    def conv(x, w, attrs):
        return apply_op(base, [x, w], name=base, **attrs)

    def input_grad(x, w, dy, attrs):
        return apply_op(input_type, [array.shape_of_input(x), w, dy], name=input_type, **attrs)

    def filter_grad(x, w, dy, attrs):
        return apply_op(filter_type, [x, array.shape_of_input(w), dy], name=filter_type, **attrs)

    @RegisterGradient(base)
    def _conv_grad(op, grad):
        x, w = op.inputs
        attrs = _public_attrs(op)
        return (input_grad(x, w, grad, attrs) if gradient_needed(x) else None,
                filter_grad(x, w, grad, attrs) if gradient_needed(w) else None)

    @RegisterGradient(input_type)
    def _input_grad_grad(op, grad):
        _, w, dy = op.inputs
        attrs = _public_attrs(op)
        return (None, filter_grad(grad, w, dy, attrs) if gradient_needed(w) else None,
                conv(grad, w, attrs) if gradient_needed(dy) else None)

    @RegisterGradient(filter_type)
    def _filter_grad_grad(op, grad):
        x, _, dy = op.inputs
        attrs = _public_attrs(op)
        return (input_grad(x, grad, dy, attrs) if gradient_needed(x) else None, None,
                conv(x, grad, attrs) if gradient_needed(dy) else None)


_define_conv_family("Conv2D", _CONV)
_define_conv_family("DepthwiseConv2dNative", _DEPTHWISE)


def _conv_attrs(strides, padding, data_format: str, dilations, op_type: str) -> dict:
    if strides is None:
        raise ValueError(f"strides of '{op_type}' must be provided.")
    return {"strides": _window_list(strides, "strides", data_format),
            "dilations": _window_list(1 if dilations is None else dilations, "dilations",
                                      data_format),
            "data_format": data_format, **_padding_attrs(padding, data_format, op_type)}


def _conv_operands(x, w, op_type: str, x_arg: str = "input") -> tuple[Tensor, Tensor]:
    x_t = convert_to_tensor(x, name=x_arg)
    check_dtype_in(x_t, FLOATING, op_type, x_arg)
    w_t = as_tensor(w, dtype=None if isinstance(w, Tensor) else x_t.dtype, name="filter",
                    like=x_t)
    return x_t, w_t


def _sizes_tensor(sizes, like: Tensor) -> Tensor:
    if isinstance(sizes, Tensor):
        return sizes
    if isinstance(sizes, TensorShape):
        sizes = sizes.as_list()
    if any(isinstance(s, Tensor) for s in sizes):
        return array.stack([as_tensor(s, dtype=dtypes.int32, like=like) for s in sizes])
    return as_tensor(np.asarray(sizes, dtype=np.int32), name="input_sizes", like=like)


def conv2d(input, filter=None, strides=None, padding=None,  # noqa: A002 - TF's names
           use_cudnn_on_gpu: bool = True, data_format: str = "NHWC", dilations=None,
           name: Optional[str] = None, filters=None) -> Tensor:
    """2-D convolution (cross-correlation) of ``input`` with ``filter`` [kh, kw, in, out].

    ``padding`` is 'SAME', 'VALID' or explicit [before, after] pairs per dimension;
    ``strides``/``dilations`` an int or a list of 1, 2 or 4 ints.
    """
    filter = _alias("filter", filter, "filters", filters)
    x, w = _conv_operands(input, filter, "Conv2D")
    return apply_op("Conv2D", [x, w], name=name or "Conv2D",
                    **_conv_attrs(strides, padding, data_format, dilations, "Conv2D"))


def conv2d_backprop_input(input_sizes, filter=None, out_backprop=None,  # noqa: A002
                          strides=None, padding=None, use_cudnn_on_gpu: bool = True,
                          data_format: str = "NHWC", dilations=None, name: Optional[str] = None,
                          filters=None) -> Tensor:
    """The gradient of ``conv2d`` with respect to its input, of shape ``input_sizes``."""
    filter = _alias("filter", filter, "filters", filters)
    dy, w = _conv_operands(out_backprop, filter, "Conv2DBackpropInput", "out_backprop")
    return apply_op("Conv2DBackpropInput", [_sizes_tensor(input_sizes, dy), w, dy],
                    name=name or "Conv2DBackpropInput",
                    **_conv_attrs(strides, padding, data_format, dilations,
                                  "Conv2DBackpropInput"))


def conv2d_backprop_filter(input, filter_sizes, out_backprop, strides,  # noqa: A002
                           padding, use_cudnn_on_gpu: bool = True, data_format: str = "NHWC",
                           dilations=None, name: Optional[str] = None) -> Tensor:
    """The gradient of ``conv2d`` with respect to its filter, of shape ``filter_sizes``."""
    x, dy = _conv_operands(input, out_backprop, "Conv2DBackpropFilter")
    return apply_op("Conv2DBackpropFilter", [x, _sizes_tensor(filter_sizes, x), dy],
                    name=name or "Conv2DBackpropFilter",
                    **_conv_attrs(strides, padding, data_format, dilations,
                                  "Conv2DBackpropFilter"))


def conv2d_transpose(value=None, filter=None, output_shape=None, strides=None,  # noqa: A002
                     padding="SAME", data_format: str = "NHWC", name: Optional[str] = None,
                     input=None, filters=None, dilations=None) -> Tensor:  # noqa: A002
    """The transpose of ``conv2d`` ("deconvolution"): ``filter`` is [kh, kw, out, in]."""
    value = _alias("value", value, "input", input)
    filter = _alias("filter", filter, "filters", filters)
    if output_shape is None:
        raise ValueError("output_shape of conv2d_transpose must be provided.")
    dy, w = _conv_operands(value, filter, "Conv2DBackpropInput", "value")
    return apply_op("Conv2DBackpropInput", [_sizes_tensor(output_shape, dy), w, dy],
                    name=name or "conv2d_transpose",
                    **_conv_attrs(strides, padding, data_format, dilations,
                                  "Conv2DBackpropInput"))


def depthwise_conv2d(input, filter, strides, padding, rate=None,  # noqa: A002 - TF's names
                     name: Optional[str] = None, data_format: Optional[str] = None,
                     dilations=None) -> Tensor:
    """Convolves each input channel with its own ``channel_multiplier`` filters.

    ``filter`` is [kh, kw, in_channels, channel_multiplier]; the output has
    in_channels * channel_multiplier channels. ``rate`` is TF1's name for ``dilations``.
    """
    data_format = data_format or "NHWC"
    dilations = None if rate is None and dilations is None else \
        _alias("dilations", dilations, "rate", rate)
    x, w = _conv_operands(input, filter, "DepthwiseConv2dNative")
    return apply_op("DepthwiseConv2dNative", [x, w], name=name or "depthwise",
                    **_conv_attrs(strides, padding, data_format, dilations,
                                  "DepthwiseConv2dNative"))


def _width_value(value, arg: str, channels_last: bool) -> int:
    """conv1d's stride/dilation: an int or a list of 1 or 3 ints."""
    values = [value] if isinstance(value, (int, np.integer)) else list(value)
    if len(values) == 3:
        return int(values[1] if channels_last else values[2])
    if len(values) != 1:
        raise ValueError(f"{arg} should be of length 1 or 3. Received: {arg}={value} of "
                         f"length {len(values)}")
    return int(values[0])


def conv1d(value=None, filters=None, stride=None, padding=None, use_cudnn_on_gpu=None,
           data_format: Optional[str] = None, name: Optional[str] = None,
           input=None, dilations=None) -> Tensor:  # noqa: A002 - TF's names
    """1-D convolution of [batch, width, channels] ``value`` with [kw, in, out] ``filters``,
    computed as a 2-D convolution of height 1."""
    value = _alias("value", value, "input", input)
    data_format = data_format or "NWC"
    if data_format not in ("NWC", "NCW", "NHWC", "NCHW"):
        raise ValueError(f'data_format must be "NWC" or "NCW", got {data_format!r}.')
    if stride is None:
        raise ValueError("stride of conv1d must be provided.")
    channels_last = data_format in ("NWC", "NHWC")
    height_axis = 1 if channels_last else 2
    with name_scope(name, "conv1d", [value, filters]):
        x, w = _conv_operands(value, filters, "Conv2D")
        result = conv2d(array.expand_dims(x, height_axis), array.expand_dims(w, 0),
                        strides=[1, _width_value(stride, "stride", channels_last)],
                        padding=padding, data_format="NHWC" if channels_last else "NCHW",
                        dilations=[1, _width_value(1 if dilations is None else dilations,
                                                   "dilations", channels_last)])
        return array.squeeze(result, [height_axis])


# --------------------------------------------------------------------------- pooling
def _lowest(dtype: np.dtype):
    """The pad value that never wins a max."""
    return -np.inf if np.issubdtype(dtype, np.floating) else np.iinfo(dtype).min


def _infer_pool(op_type: str, allowed: Sequence[dtypes.DType]) -> Callable:
    def infer(inputs, attrs):
        x = inputs[0]
        check_dtype_in(x, allowed, op_type, "input")
        _check_rank(x, 4, op_type, "input")
        spec = _checked_spec(attrs, op_type, x)
        n, h, w, c = _nhwc_dims(spec, x)
        oh, ow = spec.out_hw((h, w), spec.ksize, f"'{op_type}' of {x.name} with shape "
                                                 f"{x.shape} and ksize {attrs['ksize']}")
        return [(x.dtype, TensorShape(spec.layout(n, oh, ow, c)))]
    return infer


def _max_pool_kernel(x, **attrs):
    """Folds the taps with ``np.maximum`` (NaN wins, as in a max reduction)."""
    spec = _WindowSpec(attrs)
    x = spec.to_nhwc(x)
    windows = spec.windows(x.shape[1:3], spec.ksize)
    result = None
    for _, view in _taps(_padded(x, windows, _lowest(x.dtype)), windows):
        result = view.copy() if result is None else np.maximum(result, view, out=result)
    return spec.from_nhwc(result)


def _winning_taps(x: np.ndarray, windows: Sequence[_Window]) -> np.ndarray:
    """The tap of each window's maximum in NHWC ``x``: the first one on ties, the first
    NaN where there is one (as ``argmax`` picks them), found by folding the taps."""
    best = winner = None
    for tap, view in _taps(_padded(x, windows, _lowest(x.dtype)), windows):
        if best is None:
            best = view.copy()  # a copy: best is overwritten, and view may be x itself
            winner = np.zeros(view.shape, np.min_scalar_type(windows[0].size * windows[1].size))
            continue
        view = np.ascontiguousarray(view)  # one strided pass instead of two
        wins = np.greater(view, best)
        # taps come in increasing order, so a later winner is also a larger number
        np.maximum(winner, np.multiply(wins, tap, dtype=winner.dtype), out=winner)
        np.maximum(best, view, out=best)
    if best is not None and best.dtype.kind == "f":
        _first_nan_wins(winner, np.isnan(best), x, windows)
    return winner


def _first_nan_wins(winner: np.ndarray, nan_windows: np.ndarray, x: np.ndarray,
                    windows: Sequence[_Window]) -> None:
    """In windows holding a NaN, points ``winner`` at the first NaN tap."""
    if not nan_windows.any():
        return
    taps = list(_taps(_padded(x, windows, _lowest(x.dtype)), windows))
    for tap, view in reversed(taps):
        np.copyto(winner, tap, where=nan_windows & np.isnan(view))


def _max_pool_grad_kernel(x, y, dy, **attrs):
    """Each window's gradient goes to its maximum (the first one on ties). As in TF's
    CPU kernel, the maxima are found in ``x``; ``y`` is not read."""
    spec = _WindowSpec(attrs)
    x, dy = spec.to_nhwc(x), spec.to_nhwc(dy)
    windows = spec.windows(x.shape[1:3], spec.ksize)
    winner = _winning_taps(x, windows)
    return spec.from_nhwc(_accumulate_taps(lambda tap: _where_else_zero(winner == tap, dy),
                                           windows, x.shape, dy.dtype))


def _max_pool_grad_grad_kernel(x, y, ddx, **attrs):
    """Reads ``ddx`` (input-shaped) at each window's maximum."""
    spec = _WindowSpec(attrs)
    x, ddx = spec.to_nhwc(x), spec.to_nhwc(ddx)
    windows = spec.windows(x.shape[1:3], spec.ksize)
    winner = _winning_taps(x, windows)
    result = np.zeros(winner.shape, ddx.dtype)
    for tap, view in _taps(_padded(ddx, windows), windows):
        np.copyto(result, view, where=winner == tap)
    return spec.from_nhwc(result)


def _window_counts(windows: Sequence[_Window], in_hw: Sequence[int]) -> np.ndarray:
    """How many real (unpadded) inputs each window covers, as [1, Ho, Wo, 1]."""
    per_axis = []
    for win, size in zip(windows, in_hw):
        start = np.arange(win.out) * win.stride - win.before
        per_axis.append(np.clip(start + win.size, 0, size) - np.clip(start, 0, size))
    return np.outer(*per_axis)[None, :, :, None]


def _avg_pool_kernel(x, **attrs):
    """Mean over each window's real inputs: SAME padding is not counted."""
    spec = _WindowSpec(attrs)
    x = spec.to_nhwc(x)
    windows = spec.windows(x.shape[1:3], spec.ksize)
    total = _patches(x, windows).sum(axis=(4, 5))
    return spec.from_nhwc((total / _window_counts(windows, x.shape[1:3])).astype(x.dtype))


def _avg_pool_grad_kernel(sizes, dy, **attrs):
    spec = _WindowSpec(attrs)
    in_shape = spec.nhwc([int(s) for s in sizes])
    dy = spec.to_nhwc(dy)
    windows = spec.windows(in_shape[1:3], spec.ksize)
    share = (dy / _window_counts(windows, in_shape[1:3])).astype(dy.dtype)
    return spec.from_nhwc(_accumulate_taps(lambda tap: share, windows, in_shape, dy.dtype))


def _infer_like_input(index: int) -> Callable:
    return lambda inputs, attrs: [(inputs[-1].dtype, inputs[index].shape)]


def _infer_avg_pool_grad(inputs, attrs):
    sizes, dy = inputs
    return [(dy.dtype, _shape_from_sizes(sizes, "AvgPoolGrad"))]


define_op("MaxPool", infer=_infer_pool("MaxPool", REAL_NUMERIC), kernel=_max_pool_kernel)
define_op("MaxPoolGrad", infer=_infer_like_input(0), kernel=_max_pool_grad_kernel)
define_op("MaxPoolGradGrad", infer=_infer_like_input(1), kernel=_max_pool_grad_grad_kernel)
define_op("AvgPool", infer=_infer_pool("AvgPool", FLOATING), kernel=_avg_pool_kernel)
define_op("AvgPoolGrad", infer=_infer_avg_pool_grad, kernel=_avg_pool_grad_kernel)


@RegisterGradient("MaxPool")
def _max_pool_grad(op, grad):
    return apply_op("MaxPoolGrad", [op.inputs[0], op.outputs[0], grad], name="MaxPoolGrad",
                    **_public_attrs(op))


def _max_pool_backward_grad(op, grad, op_type: str):
    """MaxPoolGrad and MaxPoolGradGrad are linear in their last input and piecewise
    constant in the others; each one's gradient is the other one."""
    x, y, _ = op.inputs
    return (array.zeros_like(x), array.zeros_like(y),
            apply_op(op_type, [x, y, grad], name=op_type, **_public_attrs(op)))


@RegisterGradient("MaxPoolGrad")
def _max_pool_grad_grad(op, grad):
    return _max_pool_backward_grad(op, grad, "MaxPoolGradGrad")


@RegisterGradient("MaxPoolGradGrad")
def _max_pool_grad_grad_grad(op, grad):
    return _max_pool_backward_grad(op, grad, "MaxPoolGrad")


@RegisterGradient("AvgPool")
def _avg_pool_grad(op, grad):
    return apply_op("AvgPoolGrad", [array.shape_of_input(op.inputs[0]), grad],
                    name="AvgPoolGrad", **_public_attrs(op))


@RegisterGradient("AvgPoolGrad")
def _avg_pool_grad_grad(op, grad):
    return None, apply_op("AvgPool", [grad], name="AvgPool", **_public_attrs(op))


def _pool(op_type: str, value, ksize, strides, padding, data_format: str,
          name: Optional[str]) -> Tensor:
    x = convert_to_tensor(value, name="input")
    attrs = {"ksize": _window_list(ksize, "ksize", data_format),
             "strides": _window_list(strides, "strides", data_format),
             "data_format": data_format,
             **_padding_attrs(padding, data_format, op_type, explicit_ok=False)}
    return apply_op(op_type, [x], name=name or op_type, **attrs)


def max_pool(value, ksize, strides, padding, data_format: str = "NHWC",
             name: Optional[str] = None, input=None) -> Tensor:  # noqa: A002 - TF's name
    """Maximum over ``ksize`` windows of a 4-D tensor ('SAME' padding never wins)."""
    return _pool("MaxPool", _alias("value", value, "input", input), ksize, strides, padding,
                 data_format, name)


def max_pool2d(input, ksize, strides, padding, data_format: str = "NHWC",  # noqa: A002
               name: Optional[str] = None) -> Tensor:
    """``max_pool`` under its TF2 name."""
    return _pool("MaxPool", input, ksize, strides, padding, data_format, name)


def avg_pool(value, ksize, strides, padding, data_format: str = "NHWC",
             name: Optional[str] = None, input=None) -> Tensor:  # noqa: A002 - TF's name
    """Mean over ``ksize`` windows of a 4-D tensor (padding is not counted)."""
    return _pool("AvgPool", _alias("value", value, "input", input), ksize, strides, padding,
                 data_format, name)


avg_pool2d = avg_pool


# ------------------------------------------------------------------ embedding lookup
def _partition_of(ids: Tensor, tables: list[Tensor], strategy: str) -> tuple[Tensor, Tensor]:
    """For each id: the table holding its row, and the row's index in that table.

    'mod': row r lives in table r % n; 'div': tables hold contiguous ranges, the first
    (rows % n) tables one row more than the others.
    """
    count = constant(len(tables), dtype=ids.dtype)
    if strategy == "mod":
        return ids % count, ids // count
    total = math_ops.cast(math_ops.add_n([array.gather_dim(t, 0) for t in tables]), ids.dtype)
    per_table, extras = total // count, total % count
    larger = per_table + constant(1, dtype=ids.dtype)
    table = math_ops.maximum(ids // larger, (ids - extras) // per_table)
    row = math_ops.select_v2(table < extras, ids % larger, (ids - extras) % per_table)
    return table, row


def _partitioned_lookup(tables: list[Tensor], ids: Tensor, strategy: str) -> Tensor:
    """Gathers each id's row from its table; each table's gradient stays IndexedSlices."""
    table_of, row_of = _partition_of(ids, tables, strategy)
    row_rank = tables[0].shape.ndims
    if row_rank is None:
        raise ValueError(f"embedding_lookup over several tables needs params of known rank "
                         f"({tables[0].name})")
    mask_shape = array.concat([array.shape(ids), constant([1] * (row_rank - 1))], 0)
    no_row = array.zeros_like(row_of)
    pieces = []
    for index, table in enumerate(tables):
        mine = math_ops.equal(table_of, constant(index, dtype=ids.dtype))
        rows = array.gather(table, math_ops.select_v2(mine, row_of, no_row))
        pieces.append(math_ops.select_v2(array.reshape(mine, mask_shape), rows,
                                         array.zeros_like(rows)))
    return math_ops.add_n(pieces)


def _clip_rows(rows: Tensor, max_norm: float, ids_rank: Optional[int]) -> Tensor:
    """Rescales each embedding row whose L2 norm exceeds ``max_norm`` down to it."""
    if ids_rank is None or rows.shape.ndims is None:
        raise ValueError("embedding_lookup with max_norm needs ids and params of known rank")
    axes = list(range(ids_rank, rows.shape.ndims))
    square_sum = math_ops.reduce_sum(math_ops.square(rows), axes, keepdims=True)
    limit = _scalar(max_norm, rows)
    return rows * limit * math_ops.rsqrt(math_ops.maximum(square_sum, limit * limit))


def embedding_lookup(params, ids, partition_strategy: str = "mod",
                     name: Optional[str] = None, validate_indices: bool = True,
                     max_norm: Optional[float] = None) -> Tensor:
    """Rows of ``params`` (one table, or a list of tables sharded by
    ``partition_strategy``) at ``ids``; the gradient is IndexedSlices per table."""
    if partition_strategy not in ("mod", "div"):
        raise ValueError(f"Unrecognized partition strategy: {partition_strategy}.Must be one "
                         "of either `mod` or `div`.")
    tables = list(params) if isinstance(params, (list, tuple)) else [params]
    if not tables:
        raise ValueError("Length of params is currently 0. Need at least one param.")
    with name_scope(name, "embedding_lookup", tables + [ids]):
        tables = [convert_to_tensor(t, name="params") for t in tables]
        ids_t = as_tensor(ids, name="ids", like=tables[0])
        check_dtype_in(ids_t, _INDEX_TYPES, "embedding_lookup", "ids")
        if len(tables) == 1:
            result = array.gather(tables[0], ids_t, name="embedding_lookup")
        else:
            result = _partitioned_lookup(tables, ids_t, partition_strategy)
        return result if max_norm is None else _clip_rows(result, max_norm, ids_t.shape.ndims)


# ---------------------------------------------------------------------------- top_k
class TopKV2(NamedTuple):
    values: Tensor
    indices: Tensor


def _infer_top_k(inputs, attrs):
    x, k = inputs
    check_dtype_in(x, REAL_NUMERIC, "TopKV2", "input")
    check_dtype_in(k, _INDEX_TYPES, "TopKV2", "k")
    _check_rank(x, 1, "TopKV2", "input", at_least=True)
    known_k = static_ints(k)
    k_value = None if known_k is None else known_k[0]
    dims = x.shape.as_tuple()
    if k_value is not None and k_value < 0:
        raise ValueError(f"Need k >= 0, got {k_value} (top_k of {x.name})")
    if k_value is not None and dims is not None and dims[-1] is not None and dims[-1] < k_value:
        raise ValueError(f"input must have last dimension >= k = {k_value} but is {dims[-1]} "
                         f"(top_k of {x.name} with shape {x.shape})")
    shape = TensorShape(None) if dims is None else TensorShape(dims[:-1] + (k_value,))
    return [(x.dtype, shape), (attrs["index_type"], shape)]


def _top_k_kernel(x, k, **attrs):
    k, columns = int(k), x.shape[-1]
    if not 0 <= k <= columns:
        raise errors.InvalidArgumentError(
            None, None, f"input must have at least k columns. Had {columns}, needed {k}")
    # A stable ascending sort of the reversed rows, read backwards, sorts descending
    # with ties going to the lower index, as TensorFlow does.
    ascending = np.argsort(x[..., ::-1], axis=-1, kind="stable")
    indices = columns - 1 - ascending[..., ::-1][..., :k]
    return (np.take_along_axis(x, indices, axis=-1),
            indices.astype(attrs["index_type"].as_numpy_dtype))


define_op("TopKV2", infer=_infer_top_k, kernel=_top_k_kernel)


@RegisterGradient("TopKV2")
def _top_k_grad(op, grad_values, grad_indices):
    """Scatters the values' gradient back to the positions they were taken from."""
    x, indices = op.inputs[0], op.outputs[1]
    index_type = indices.dtype
    x_shape = array.shape_of_input(x)
    size = array.size(x, out_type=index_type)
    row_starts = math_ops.range(0, size, math_ops.cast(x_shape[-1], index_type))
    per_row = array.reshape(indices, [-1, array.shape(indices)[-1]])
    flat = array.reshape(per_row + array.expand_dims(row_starts, -1), [-1])
    dense = array.unsorted_segment_sum(array.reshape(grad_values, [-1]), flat, size)
    return array.reshape(dense, x_shape), None


def top_k(input, k=1, sorted: bool = True, index_type=dtypes.int32,  # noqa: A002 - TF's names
          name: Optional[str] = None) -> TopKV2:
    """The ``k`` largest entries of each last-axis row, descending, and their indices."""
    x = convert_to_tensor(input, name="input")
    k_t = as_tensor(k, dtype=None if isinstance(k, Tensor) else dtypes.int32, name="k", like=x)
    values, indices = apply_op("TopKV2", [x, k_t], name=name or "TopKV2", sorted=bool(sorted),
                               index_type=dtypes.as_dtype(index_type))
    return TopKV2(values, indices)
