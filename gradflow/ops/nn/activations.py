"""Activations: relu and its relatives, softmax and log_softmax, bias_add."""
from __future__ import annotations

from typing import Callable, Optional

import numpy as np

from gradflow.framework import errors
from gradflow.framework.constant import constant, convert_to_tensor
from gradflow.framework.graph import Operation, Tensor, name_scope
from gradflow.framework.registry import RegisterGradient, define_op, gradient_needed
from gradflow.framework.tensor_shape import TensorShape
from gradflow.ops import array
from gradflow.ops import math as math_ops
from gradflow.ops.common import (FLOATING, REAL_NUMERIC, apply_op, as_tensor, check_dtype_in,
                                 constructor, same_as_input)
from gradflow.ops.nn.helpers import (axis_alias, check_matching_dtype, check_rank, floating_tensor,
                                     public_attrs, scalar, where_else_zero)


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
        return apply_op(grad_type, [grad, t], name=grad_type, **public_attrs(op))

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
    negative = math_ops.less(y, scalar(0, y))
    return math_ops.select_v2(negative, grad * dy, array.zeros_like(grad))


_SELU_ALPHA = 1.6732632423543772848170429916717


_SELU_SCALE = 1.0507009873554804934193349852946


def _negative_part_expm1(x: np.ndarray) -> np.ndarray:
    """exp(x) - 1 for x <= 0 (clamped so large positive x cannot overflow)."""
    return np.expm1(np.minimum(x, 0))


_define_activation("Relu", lambda x: np.maximum(x, 0),
                   lambda dy, x: where_else_zero(x > 0, dy), from_output=False)


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


@constructor("Relu", "features")
def relu(features, name: Optional[str] = None) -> Tensor:
    """max(features, 0)."""
    return _activation("Relu", features, name, REAL_NUMERIC)


@constructor("Relu6", "features")
def relu6(features, name: Optional[str] = None) -> Tensor:
    """min(max(features, 0), 6)."""
    return _activation("Relu6", features, name, REAL_NUMERIC)


@constructor("LeakyRelu", "features", "alpha", single_op=False)
def leaky_relu(features, alpha: float = 0.2, name: Optional[str] = None) -> Tensor:
    """features where positive, alpha * features elsewhere."""
    return _activation("LeakyRelu", features, name, alpha=float(alpha))


@constructor("Elu", "features", single_op=False)
def elu(features, name: Optional[str] = None) -> Tensor:
    """features where positive, exp(features) - 1 elsewhere."""
    return _activation("Elu", features, name)


@constructor("Selu", "features", single_op=False)
def selu(features, name: Optional[str] = None) -> Tensor:
    """Scaled ELU with the self-normalising constants of Klambauer et al. (2017)."""
    return _activation("Selu", features, name)


@constructor("silu", "features", "beta", single_op=False)
def silu(features, beta: float = 1.0, name: Optional[str] = None) -> Tensor:
    """features * sigmoid(beta * features), also known as swish."""
    x = floating_tensor(features, "silu", "features")
    with name_scope(name, "swish", [x]) as scope:
        scaled = x if beta == 1.0 else x * scalar(beta, x)
        return math_ops.multiply(x, math_ops.sigmoid(scaled), name=scope)


swish = silu


@constructor("gelu", "features", "approximate", single_op=False)
def gelu(features, approximate: bool = False, name: Optional[str] = None) -> Tensor:
    """Gaussian error linear unit x * P(X <= x), X ~ N(0, 1); tanh approximation optional."""
    x = floating_tensor(features, "gelu", "features")
    with name_scope(name, "Gelu", [x]) as scope:
        half_x = x * scalar(0.5, x)
        if approximate:
            cubic = x + scalar(0.044715, x) * x * x * x
            inner = math_ops.tanh(scalar(np.sqrt(2 / np.pi), x) * cubic)
        else:
            inner = math_ops.erf(x * scalar(np.sqrt(0.5), x))
        return math_ops.multiply(half_x, scalar(1, x) + inner, name=scope)


# --------------------------------------------------------------------------- softmax
def log_softmax_array(x: np.ndarray, axis: int) -> np.ndarray:
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
          kernel=lambda x, *, axis: log_softmax_array(x, axis))


def softmax_backward(p: Tensor, grad: Tensor, axis: int = -1) -> Tensor:
    """The softmax Jacobian (at output ``p``) applied to ``grad``: p * (g - <g, p>)."""
    return (grad - math_ops.reduce_sum(grad * p, axis, keepdims=True)) * p


@RegisterGradient("Softmax")
def _softmax_grad(op, grad):
    return softmax_backward(op.outputs[0], grad, op.get_attr("axis"))


@RegisterGradient("LogSoftmax")
def _log_softmax_grad(op, grad):
    """g - softmax * sum(g) along the axis."""
    axis = op.get_attr("axis")
    return grad - math_ops.exp(op.outputs[0]) * math_ops.reduce_sum(grad, axis, keepdims=True)


def _softmax_op(op_type: str, logits, axis, name, dim) -> Tensor:
    x = convert_to_tensor(logits, name="logits")
    check_dtype_in(x, FLOATING, op_type, "logits")
    return apply_op(op_type, [x], name=name or op_type, axis=int(axis_alias(axis, dim, -1)))


@constructor("Softmax", "logits", "axis", "dim", single_op=False)
def softmax(logits, axis: Optional[int] = None, name: Optional[str] = None,
            dim: Optional[int] = None) -> Tensor:
    """exp(logits) / sum(exp(logits)) along ``axis`` (default: the last), computed stably."""
    return _softmax_op("Softmax", logits, axis, name, dim)


@constructor("LogSoftmax", "logits", "axis", "dim", single_op=False)
def log_softmax(logits, axis: Optional[int] = None, name: Optional[str] = None,
                dim: Optional[int] = None) -> Tensor:
    """logits - log(sum(exp(logits))) along ``axis``; finite even at extreme logits."""
    return _softmax_op("LogSoftmax", logits, axis, name, dim)


# ------------------------------------------------------------------------- bias_add
def _channels_first(data_format: str) -> bool:
    return data_format.startswith("NC")


def _infer_bias_add(inputs, attrs):
    value, bias = inputs
    check_matching_dtype(bias, value, "BiasAdd", "bias", "value")
    check_rank(bias, 1, "BiasAdd", "bias")
    check_rank(value, 2, "BiasAdd", "value", at_least=True)
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


@constructor("BiasAdd", "value", "bias")
def bias_add(value, bias, data_format: Optional[str] = None,
             name: Optional[str] = None) -> Tensor:
    """Adds a 1-D ``bias`` along the channel axis of ``value`` (last, or 1 for NC...)."""
    data_format = data_format or "NHWC"
    if not (data_format.startswith("NC") or data_format.endswith("C")):
        raise ValueError(f"data_format must put channels last or second (e.g. 'NHWC' or "
                         f"'NCHW'), got {data_format!r}")
    value_t = convert_to_tensor(value, name="input")
    check_dtype_in(value_t, REAL_NUMERIC, "BiasAdd", "value")
    bias_t = as_tensor(bias, dtype=None if isinstance(bias, Tensor) else value_t.dtype,
                       name="bias", like=value_t)
    return apply_op("BiasAdd", [value_t, bias_t], name=name or "BiasAdd",
                    data_format=data_format)


@constructor("xw_plus_b", "x", "weights", "biases", single_op=False)
def xw_plus_b(x, weights, biases, name: Optional[str] = None) -> Tensor:
    """matmul(x, weights) + biases."""
    with name_scope(name, "xw_plus_b", [x, weights, biases]) as scope:
        return bias_add(math_ops.matmul(x, weights), biases, name=scope)
