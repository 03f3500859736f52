"""Pooling: max and average pooling and their gradients."""
from __future__ import annotations

from typing import Callable, Optional, Sequence

import numpy as np

from gradflow.framework import dtypes
from gradflow.framework.constant import convert_to_tensor
from gradflow.framework.graph import Tensor
from gradflow.framework.registry import RegisterGradient, define_op
from gradflow.framework.tensor_shape import TensorShape
from gradflow.ops import array
from gradflow.ops.common import FLOATING, REAL_NUMERIC, apply_op, check_dtype_in, constructor
from gradflow.ops.nn.convolution import (Window, WindowSpec, accumulate_taps, alias, checked_spec,
                                         nhwc_dims, pad_windows, padding_attrs, patches,
                                         shape_from_sizes, window_list, window_taps)
from gradflow.ops.nn.helpers import check_rank, public_attrs, where_else_zero


# --------------------------------------------------------------------------- pooling
def _lowest(dtype: np.dtype):
    """The pad value that never wins a max."""
    return -np.inf if np.issubdtype(dtype, np.floating) else np.iinfo(dtype).min


def _infer_pool(op_type: str, allowed: Sequence[dtypes.DType]) -> Callable:
    def infer(inputs, attrs):
        x = inputs[0]
        check_dtype_in(x, allowed, op_type, "input")
        check_rank(x, 4, op_type, "input")
        spec = checked_spec(attrs, op_type, x)
        n, h, w, c = nhwc_dims(spec, x)
        oh, ow = spec.out_hw((h, w), spec.ksize, f"'{op_type}' of {x.name} with shape "
                                                 f"{x.shape} and ksize {attrs['ksize']}")
        return [(x.dtype, TensorShape(spec.layout(n, oh, ow, c)))]
    return infer


def _max_pool_kernel(x, **attrs):
    """Folds the taps with ``np.maximum`` (NaN wins, as in a max reduction)."""
    spec = WindowSpec(attrs)
    x = spec.to_nhwc(x)
    windows = spec.windows(x.shape[1:3], spec.ksize)
    result = None
    for _, view in window_taps(pad_windows(x, windows, _lowest(x.dtype)), windows):
        result = view.copy() if result is None else np.maximum(result, view, out=result)
    return spec.from_nhwc(result)


def _winning_taps(x: np.ndarray, windows: Sequence[Window]) -> np.ndarray:
    """The tap of each window's maximum in NHWC ``x``: the first one on ties, the first
    NaN where there is one (as ``argmax`` picks them), found by folding the taps."""
    best = winner = None
    for tap, view in window_taps(pad_windows(x, windows, _lowest(x.dtype)), windows):
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
                    windows: Sequence[Window]) -> None:
    """In windows holding a NaN, points ``winner`` at the first NaN tap."""
    if not nan_windows.any():
        return
    taps = list(window_taps(pad_windows(x, windows, _lowest(x.dtype)), windows))
    for tap, view in reversed(taps):
        np.copyto(winner, tap, where=nan_windows & np.isnan(view))


def _max_pool_grad_kernel(x, y, dy, **attrs):
    """Each window's gradient goes to its maximum (the first one on ties). As in TF's
    CPU kernel, the maxima are found in ``x``; ``y`` is not read."""
    spec = WindowSpec(attrs)
    x, dy = spec.to_nhwc(x), spec.to_nhwc(dy)
    windows = spec.windows(x.shape[1:3], spec.ksize)
    winner = _winning_taps(x, windows)
    return spec.from_nhwc(accumulate_taps(lambda tap: where_else_zero(winner == tap, dy),
                                           windows, x.shape, dy.dtype))


def _max_pool_grad_grad_kernel(x, y, ddx, **attrs):
    """Reads ``ddx`` (input-shaped) at each window's maximum."""
    spec = WindowSpec(attrs)
    x, ddx = spec.to_nhwc(x), spec.to_nhwc(ddx)
    windows = spec.windows(x.shape[1:3], spec.ksize)
    winner = _winning_taps(x, windows)
    result = np.zeros(winner.shape, ddx.dtype)
    for tap, view in window_taps(pad_windows(ddx, windows), windows):
        np.copyto(result, view, where=winner == tap)
    return spec.from_nhwc(result)


def _window_counts(windows: Sequence[Window], in_hw: Sequence[int], dtype) -> np.ndarray:
    """How many real (unpadded) inputs each window covers, as [1, Ho, Wo, 1] of ``dtype``
    (the data's: dividing by int64 counts would compute in float64)."""
    per_axis = []
    for win, size in zip(windows, in_hw):
        start = np.arange(win.out) * win.stride - win.before
        per_axis.append(np.clip(start + win.size, 0, size) - np.clip(start, 0, size))
    return np.outer(*per_axis)[None, :, :, None].astype(dtype)


def _avg_pool_kernel(x, **attrs):
    """Mean over each window's real inputs: SAME padding is not counted."""
    spec = WindowSpec(attrs)
    x = spec.to_nhwc(x)
    windows = spec.windows(x.shape[1:3], spec.ksize)
    total = patches(x, windows).sum(axis=(4, 5))
    return spec.from_nhwc(total / _window_counts(windows, x.shape[1:3], total.dtype))


def _avg_pool_grad_kernel(sizes, dy, **attrs):
    spec = WindowSpec(attrs)
    in_shape = spec.nhwc([int(s) for s in sizes])
    dy = spec.to_nhwc(dy)
    windows = spec.windows(in_shape[1:3], spec.ksize)
    share = dy / _window_counts(windows, in_shape[1:3], dy.dtype)
    return spec.from_nhwc(accumulate_taps(lambda tap: share, windows, in_shape, dy.dtype))


def _infer_like_input(index: int) -> Callable:
    return lambda inputs, attrs: [(inputs[-1].dtype, inputs[index].shape)]


def _infer_avg_pool_grad(inputs, attrs):
    sizes, dy = inputs
    return [(dy.dtype, shape_from_sizes(sizes, "AvgPoolGrad"))]


define_op("MaxPool", infer=_infer_pool("MaxPool", REAL_NUMERIC), kernel=_max_pool_kernel)


define_op("MaxPoolGrad", infer=_infer_like_input(0), kernel=_max_pool_grad_kernel)


define_op("MaxPoolGradGrad", infer=_infer_like_input(1), kernel=_max_pool_grad_grad_kernel)


define_op("AvgPool", infer=_infer_pool("AvgPool", FLOATING), kernel=_avg_pool_kernel)


define_op("AvgPoolGrad", infer=_infer_avg_pool_grad, kernel=_avg_pool_grad_kernel)


@RegisterGradient("MaxPool")
def _max_pool_grad(op, grad):
    return apply_op("MaxPoolGrad", [op.inputs[0], op.outputs[0], grad], name="MaxPoolGrad",
                    **public_attrs(op))


def _max_pool_backward_grad(op, grad, op_type: str):
    """MaxPoolGrad and MaxPoolGradGrad are linear in their last input and piecewise
    constant in the others; each one's gradient is the other one."""
    x, y, _ = op.inputs
    return (array.zeros_like(x), array.zeros_like(y),
            apply_op(op_type, [x, y, grad], name=op_type, **public_attrs(op)))


@RegisterGradient("MaxPoolGrad")
def _max_pool_grad_grad(op, grad):
    return _max_pool_backward_grad(op, grad, "MaxPoolGradGrad")


@RegisterGradient("MaxPoolGradGrad")
def _max_pool_grad_grad_grad(op, grad):
    return _max_pool_backward_grad(op, grad, "MaxPoolGrad")


@RegisterGradient("AvgPool")
def _avg_pool_grad(op, grad):
    return apply_op("AvgPoolGrad", [array.shape_of_input(op.inputs[0]), grad],
                    name="AvgPoolGrad", **public_attrs(op))


@RegisterGradient("AvgPoolGrad")
def _avg_pool_grad_grad(op, grad):
    return None, apply_op("AvgPool", [grad], name="AvgPool", **public_attrs(op))


def _pool(op_type: str, value, ksize, strides, padding, data_format: str,
          name: Optional[str]) -> Tensor:
    x = convert_to_tensor(value, name="input")
    attrs = {"ksize": window_list(ksize, "ksize", data_format),
             "strides": window_list(strides, "strides", data_format),
             "data_format": data_format,
             **padding_attrs(padding, data_format, op_type, explicit_ok=False)}
    return apply_op(op_type, [x], name=name or op_type, **attrs)


@constructor("MaxPool", "value", "ksize", "strides", "padding", "data_format", "input",
             single_op=False)
def max_pool(value, ksize, strides, padding, data_format: str = "NHWC",
             name: Optional[str] = None, input=None) -> Tensor:  # noqa: A002 - TF's name
    """Maximum over ``ksize`` windows of a 4-D tensor ('SAME' padding never wins)."""
    return _pool("MaxPool", alias("value", value, "input", input), ksize, strides, padding,
                 data_format, name)


@constructor("MaxPool2d", "input", "ksize", "strides", "padding", "data_format", single_op=False)
def max_pool2d(input, ksize, strides, padding, data_format: str = "NHWC",  # noqa: A002
               name: Optional[str] = None) -> Tensor:
    """``max_pool`` under its TF2 name."""
    return _pool("MaxPool", input, ksize, strides, padding, data_format, name)


@constructor("AvgPool", "value", "ksize", "strides", "padding", "data_format", "input",
             single_op=False)
def avg_pool(value, ksize, strides, padding, data_format: str = "NHWC",
             name: Optional[str] = None, input=None) -> Tensor:  # noqa: A002 - TF's name
    """Mean over ``ksize`` windows of a 4-D tensor (padding is not counted)."""
    return _pool("AvgPool", alias("value", value, "input", input), ksize, strides, padding,
                 data_format, name)


avg_pool2d = avg_pool
