"""Local ops of the classic image networks: ``lrn`` (local response normalization, as in
AlexNet and the CIFAR-10 tutorial), ``max_pool_with_argmax``, ``crelu`` and
``relu_layer``.

``LRN`` and ``MaxPoolWithArgmax`` are primitives under TF's type names with their
backward ops (``LRNGrad``; ``MaxPoolGradWithArgmax`` and ``MaxPoolGradGradWithArgmax``).
The window sums of ``LRN`` run over the channel axis; the argmax pooling folds the taps
of the shared window geometry (``windows.py``), loops running over taps only.
"""
from __future__ import annotations

import collections
from typing import Optional

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from gradflow.framework import dtypes
from gradflow.framework.constant import convert_to_tensor
from gradflow.framework.graph import Tensor, name_scope
from gradflow.framework.registry import RegisterGradient, define_op
from gradflow.framework.tensor_shape import TensorShape
from gradflow.ops import array
from gradflow.ops.common import (FLOATING, REAL_NUMERIC, apply_op, check_dtype_in,
                                 constructor)
from gradflow.ops.math import matmul, negative
from gradflow.ops.nn.activations import bias_add, relu
from gradflow.ops.nn.helpers import check_rank, public_attrs
from gradflow.ops.nn.windows import (checked_spec, pad_windows, padding_attrs,
                                     static_last_dims, window_list, window_taps)

__all__ = ["lrn", "local_response_normalization", "max_pool_with_argmax", "crelu",
           "relu_layer"]


# ----------------------------------------------------------------------- LRN
def _channel_window_sum(values: np.ndarray, radius: int) -> np.ndarray:
    """Sum over channels ``c - radius .. c + radius`` (clipped at the edges)."""
    padded = np.pad(values, [(0, 0)] * (values.ndim - 1) + [(radius, radius)])
    return sliding_window_view(padded, 2 * radius + 1, axis=-1).sum(axis=-1)


def _lrn_norm(x: np.ndarray, depth_radius, bias, alpha) -> np.ndarray:
    return bias + alpha * _channel_window_sum(np.square(x, dtype=np.float64), depth_radius)


def _lrn_kernel(x, *, depth_radius, bias, alpha, beta):
    norm = _lrn_norm(x, depth_radius, bias, alpha)
    return (x / norm ** beta).astype(x.dtype)


def _lrn_grad_kernel(grads, x, y, *, depth_radius, bias, alpha, beta):
    """d out_i / d x_j = [i == j] N_i^-beta - 2 alpha beta x_i x_j N_i^(-beta-1) over
    the channel windows holding both; the windows are symmetric, so the sum over the
    outputs i reading x_j is a window sum around j."""
    wide = np.float64
    norm = _lrn_norm(x, depth_radius, bias, alpha)
    g, xs = grads.astype(wide), x.astype(wide)
    spread = _channel_window_sum(g * xs * norm ** (-beta - 1), depth_radius)
    return (g * norm ** -beta - 2 * alpha * beta * xs * spread).astype(x.dtype)


_LRN_TYPES = FLOATING


def _infer_lrn(inputs, attrs):
    x = inputs[0]
    check_dtype_in(x, _LRN_TYPES, "LRN", "input")
    if x.shape.ndims is not None and x.shape.ndims != 4:
        raise ValueError(f"Shape must be rank 4 but is rank {x.shape.ndims} for 'LRN' with "
                         f"input shapes: {x.shape}.")
    return [(x.dtype, x.shape if x.shape.ndims is not None else TensorShape([None] * 4))]


define_op("LRN", infer=_infer_lrn, kernel=_lrn_kernel)
define_op("LRNGrad", infer=lambda inputs, attrs: [(inputs[1].dtype, inputs[1].shape)],
          kernel=_lrn_grad_kernel)


@RegisterGradient("LRN")
def _lrn_grad(op, grad):
    return apply_op("LRNGrad", [grad, op.inputs[0], op.outputs[0]], name="LRNGrad",
                    **public_attrs(op))


@RegisterGradient("LRNGrad")
def _lrn_grad_grad(op, grad):
    """TF defines no second derivative of LRN; asking for one is its LookupError."""
    raise LookupError(f"No gradient defined for operation'{op.name}' (op type: {op.type}). "
                      "In general every operation must have an associated "
                      "`@tf.RegisterGradient` for correct autodiff, which this op is lacking. "
                      "If you want to pretend this operation is a constant in your program, "
                      "you may insert `tf.stop_gradient`.")


@constructor("LRN", "input")
def lrn(input, depth_radius: int = 5, bias: float = 1.0, alpha: float = 1.0,
        beta: float = 0.5, name: Optional[str] = None) -> Tensor:
    """Local response normalization: each value divided by ``(bias + alpha * sum of
    squares over the 2 * depth_radius + 1 channels around it) ** beta``."""
    x = convert_to_tensor(input, name="input")
    return apply_op("LRN", [x], name=name or "LRN", depth_radius=int(depth_radius),
                    bias=float(bias), alpha=float(alpha), beta=float(beta))


local_response_normalization = lrn


# ------------------------------------------------------------ MaxPoolWithArgmax
def _argmax_windows(attrs: dict, shape) -> tuple:
    spec = checked_spec({**attrs, "data_format": "NHWC"}, "MaxPoolWithArgmax",
                        _ShapeOnly(shape))
    return spec.windows(shape[1:3], spec.ksize)


class _ShapeOnly:
    """Names an input in window-attr errors raised by kernels (which see arrays)."""

    def __init__(self, shape):
        self.name = f"an input of shape {list(shape)}"


def _flat_positions(windows, tap_index, shape, include_batch: bool) -> np.ndarray:
    """The flattened input index each output position's tap ``tap_index`` reads."""
    n, h, w, c = shape
    (wy, wx), (ty, tx) = windows, tap_index
    ys = np.arange(wy.out) * wy.stride + ty * wy.dilation - wy.before
    xs = np.arange(wx.out) * wx.stride + tx * wx.dilation - wx.before
    spatial = (ys[:, None] * w + xs[None, :])[None, :, :, None] * c
    index = spatial + np.arange(c)[None, None, None, :]
    if include_batch:
        index = index + (np.arange(n) * h * w * c)[:, None, None, None]
    return np.broadcast_to(index, (n, wy.out, wx.out, c))


def _max_pool_argmax_kernel(x, *, ksize, strides, padding, Targmax, include_batch_in_index):
    windows = _argmax_windows({"ksize": ksize, "strides": strides, "padding": padding},
                              x.shape)
    lowest = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
    padded = pad_windows(x, windows, lowest)
    taps = [(ty, tx) for ty in range(windows[0].size) for tx in range(windows[1].size)]
    best = argmax = None
    for (_, view), tap in zip(window_taps(padded, windows), taps, strict=True):
        where = _flat_positions(windows, tap, x.shape, include_batch_in_index)
        if best is None:
            best, argmax = view.copy(), where.copy()
            continue
        wins = view > best  # the first maximum in scan order keeps its place
        best = np.where(wins, view, best)
        argmax = np.where(wins, where, argmax)
    return best, argmax.astype(Targmax.as_numpy_dtype)


def _per_batch(values: np.ndarray, include_batch: bool, rows: int) -> np.ndarray:
    return values.reshape(1 if include_batch else rows, -1)


def _max_pool_grad_argmax_kernel(x, grad, argmax, *, include_batch_in_index, **_):
    rows = x.shape[0]
    out = np.zeros(x.size, dtype=x.dtype).reshape(1 if include_batch_in_index else rows, -1)
    index = _per_batch(argmax.astype(np.int64), include_batch_in_index, rows)
    batch = np.broadcast_to(np.arange(index.shape[0])[:, None], index.shape)
    np.add.at(out, (batch, index), _per_batch(grad, include_batch_in_index, rows))
    return out.reshape(x.shape)


def _max_pool_grad_grad_argmax_kernel(x, grad, argmax, *, include_batch_in_index, **_):
    rows = x.shape[0]
    index = _per_batch(argmax.astype(np.int64), include_batch_in_index, rows)
    source = _per_batch(grad, include_batch_in_index, rows)
    return np.take_along_axis(source, index, axis=1).reshape(argmax.shape).astype(x.dtype)


def _infer_argmax_pool(inputs, attrs):
    x = inputs[0]
    check_dtype_in(x, REAL_NUMERIC, "MaxPoolWithArgmax", "input")
    check_rank(x, 4, "MaxPoolWithArgmax", "input")
    spec = checked_spec({**attrs, "data_format": "NHWC"}, "MaxPoolWithArgmax", x)
    dims = static_last_dims(spec, x)
    out = spec.out_sizes(dims[1:3], spec.ksize, f"'MaxPoolWithArgmax' of {x.name} with shape "
                                                f"{x.shape} and ksize {attrs['ksize']}")
    shape = TensorShape([dims[0], *out, dims[3]])
    return [(x.dtype, shape), (attrs["Targmax"], shape)]


define_op("MaxPoolWithArgmax", infer=_infer_argmax_pool, kernel=_max_pool_argmax_kernel)
define_op("MaxPoolGradWithArgmax", infer=lambda inputs, attrs: [(inputs[0].dtype,
                                                                 inputs[0].shape)],
          kernel=_max_pool_grad_argmax_kernel)
define_op("MaxPoolGradGradWithArgmax", infer=lambda inputs, attrs: [(inputs[0].dtype,
                                                                     inputs[2].shape)],
          kernel=_max_pool_grad_grad_argmax_kernel)


def _argmax_attrs(op) -> dict:
    return {k: op.get_attr(k) for k in ("ksize", "strides", "padding",
                                        "include_batch_in_index")}


@RegisterGradient("MaxPoolWithArgmax")
def _max_pool_argmax_grad(op, grad, _argmax_grad):
    """Each output's gradient goes to the input position its argmax names."""
    return apply_op("MaxPoolGradWithArgmax", [op.inputs[0], grad, op.outputs[1]],
                    name="MaxPoolGradWithArgmax", **_argmax_attrs(op))


@RegisterGradient("MaxPoolGradWithArgmax")
def _max_pool_grad_argmax_grad(op, grad):
    """Linear in the output gradient: its adjoint gathers at the argmax positions."""
    x, _, argmax = op.inputs
    return (array.zeros_like(x),
            apply_op("MaxPoolGradGradWithArgmax", [x, grad, argmax],
                     name="MaxPoolGradGradWithArgmax", **public_attrs(op)), None)


@RegisterGradient("MaxPoolGradGradWithArgmax")
def _max_pool_grad_grad_argmax_grad(op, grad):
    x, _, argmax = op.inputs
    return (array.zeros_like(x),
            apply_op("MaxPoolGradWithArgmax", [x, grad, argmax],
                     name="MaxPoolGradWithArgmax", **public_attrs(op)), None)


@constructor("MaxPoolWithArgmax", "input", single_op=False)
def max_pool_with_argmax(input, ksize, strides, padding,
                         data_format: str = "NHWC", Targmax=None,
                         name: Optional[str] = None, output_dtype=None,
                         include_batch_in_index: bool = False) -> tuple:
    """Max pooling that also returns each maximum's flattened input index
    (``(y * width + x) * channels + c``, plus the batch offset when
    ``include_batch_in_index``); ``(output, argmax)``."""
    if data_format != "NHWC":
        raise ValueError("`data_format` values other  than 'NHWC' are not supported. "
                         f"Received: data_format={data_format}")
    if Targmax is not None and output_dtype is not None and Targmax != output_dtype:
        raise ValueError("Cannot specify both 'Targmax' and 'output_dtype'.")
    index_type = dtypes.as_dtype(Targmax or output_dtype or dtypes.int64)
    if index_type not in (dtypes.int32, dtypes.int64):
        raise TypeError(f"Value passed to parameter 'Targmax' has DataType {index_type.name} "
                        "not in list of allowed values: int32, int64")
    x = convert_to_tensor(input, name="input")
    attrs = {"ksize": window_list(ksize, "ksize", "NHWC"),
             "strides": window_list(strides, "strides", "NHWC"),
             "padding": padding_attrs(padding, "NHWC", "MaxPoolWithArgmax",
                                      explicit_ok=False)["padding"],
             "Targmax": index_type, "include_batch_in_index": bool(include_batch_in_index)}
    output, argmax = apply_op("MaxPoolWithArgmax", [x], name=name or "MaxPoolWithArgmax",
                              **attrs)
    return _ArgmaxResult(output, argmax)


# ``(output, argmax)``, also by name, as TF's result.
_ArgmaxResult = collections.namedtuple("MaxPoolWithArgmax", ["output", "argmax"])


# ------------------------------------------------------------ crelu, relu_layer
@constructor("CRelu", "features", single_op=False)
def crelu(features, name: Optional[str] = None, axis: int = -1) -> Tensor:
    """Concatenated ReLU: ``relu(concat([x, -x], axis))``, twice the depth."""
    with name_scope(name, "CRelu", [features]) as scope:
        x = convert_to_tensor(features, name="features")
        both = array.concat([x, negative(x)], axis, name=scope)
        return relu(both)


@constructor("relu_layer", "x", "weights", "biases", single_op=False)
def relu_layer(x, weights, biases, name: Optional[str] = None) -> Tensor:
    """``relu(matmul(x, weights) + biases)``, as one fully connected layer."""
    with name_scope(name, "relu_layer", [x, weights, biases]) as scope:
        x = convert_to_tensor(x, name="x")
        weights = convert_to_tensor(weights, name="weights")
        biases = convert_to_tensor(biases, name="biases")
        return relu(bias_add(matmul(x, weights), biases), name=scope)
