"""More neural-network ops for ``tf.layers``: 3-D convolution and pooling, 1-D pooling,
separable convolution and ``nn.pool``.

The 3-D ops are primitives under TF's type names (``Conv3D`` with
``Conv3DBackpropInputV2``/``Conv3DBackpropFilterV2``, ``MaxPool3D`` with
``MaxPool3DGrad``/``MaxPool3DGradGrad``, ``AvgPool3D`` with ``AvgPool3DGrad``); every
backward op is differentiable in turn. Kernels work on channels-last arrays with any
number of spatial axes: a convolution is one im2col matrix product, pooling folds the
filter taps; loops run over taps, never over positions. The 1-D and separable forms are
composed from the 2-D ops, as TF composes them.
"""
from __future__ import annotations

import itertools
from typing import Callable, NamedTuple, Optional, Sequence

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from gradflow.framework import dtypes
from gradflow.framework.constant import convert_to_tensor
from gradflow.framework.graph import Operation, Tensor, name_scope
from gradflow.framework.registry import RegisterGradient, define_op, gradient_needed
from gradflow.framework.tensor_shape import TensorShape
from gradflow.ops import array
from gradflow.ops.common import (FLOATING, apply_op, as_tensor, check_dtype_in, constructor,
                                 static_ints)
from gradflow.ops.nn import avg_pool, conv2d, depthwise_conv2d, max_pool
from gradflow.ops.nn.convolution import conv_operands, sizes_tensor

__all__ = ["conv3d", "conv3d_backprop_filter_v2", "conv3d_transpose", "max_pool3d",
           "avg_pool3d", "max_pool1d", "avg_pool1d", "separable_conv2d", "pool"]

_INDEX_TYPES = (dtypes.int32, dtypes.int64)
_FORMATS_3D = ("NDHWC", "NCDHW")


# ------------------------------------------------------------ sliding-window geometry
class _Axis(NamedTuple):
    """One spatial axis: output ``o`` reads padded input ``o * stride + t * dilation``
    for taps ``t < size``; ``before``/``after`` is the padding around the input."""

    size: int
    stride: int
    dilation: int
    before: int
    after: int
    out: int

    def reads(self, tap: int) -> slice:
        start = tap * self.dilation
        return slice(start, start + self.stride * (self.out - 1) + 1, self.stride)


def _fit_axis(in_size: int, size: int, stride: int, dilation: int, padding: str) -> _Axis:
    span = (size - 1) * dilation + 1
    if padding == "SAME":
        out = -(-in_size // stride)
        total = max((out - 1) * stride + span - in_size, 0)
        return _Axis(size, stride, dilation, total // 2, total - total // 2, out)
    if in_size < span:
        raise ValueError(f"Negative dimension size caused by subtracting {span} from "
                         f"{in_size}")
    return _Axis(size, stride, dilation, 0, 0, (in_size - span) // stride + 1)


class _Spec:
    """The window attrs of a 3-D op (``strides``, ``dilations``, ``ksize``: 5 entries in
    ``data_format`` order), read as per-spatial-axis values."""

    def __init__(self, attrs: dict):
        data_format = attrs["data_format"]
        if data_format not in _FORMATS_3D:
            raise ValueError(f"data_format must be 'NDHWC' or 'NCDHW', got {data_format!r}")
        self.channels_last = data_format == "NDHWC"
        self.spatial = (1, 2, 3) if self.channels_last else (2, 3, 4)
        self.padding = attrs["padding"]
        if self.padding not in ("SAME", "VALID"):
            raise ValueError(f"Attr 'padding' passed string '{self.padding}' not in: "
                             "\"SAME\", \"VALID\".")
        self.strides = self._entries(attrs["strides"], "strides")
        self.dilations = self._entries(attrs.get("dilations", [1] * 5), "dilations")
        ksize = attrs.get("ksize")
        self.ksize = None if ksize is None else self._entries(ksize, "ksize")

    def _entries(self, values: Sequence[int], arg: str) -> tuple[int, ...]:
        values = list(values)
        if len(values) != 5 or min(values) < 1 or \
                any(values[a] != 1 for a in range(5) if a not in self.spatial):
            raise ValueError(f"{arg} must hold 5 positive values with 1 in the batch and "
                             f"channel dimensions (windows across them are not supported), "
                             f"got {values}")
        return tuple(values[a] for a in self.spatial)

    def axes(self, in_sizes: Sequence[int], sizes: Sequence[int]) -> tuple[_Axis, ...]:
        return tuple(_fit_axis(n, k, s, d, self.padding) for n, k, s, d in zip(
            in_sizes, sizes, self.strides, self.dilations, strict=True))

    def out_sizes(self, in_sizes: Sequence, sizes: Sequence, context: str) -> list:
        """Static output sizes (None where an input size is unknown)."""
        result = []
        for n, k, s, d in zip(in_sizes, sizes, self.strides, self.dilations, strict=True):
            if n is None or k is None:
                result.append(None)
                continue
            try:
                result.append(_fit_axis(n, k, s, d, self.padding).out)
            except ValueError as err:
                raise ValueError(f"{err} for {context}") from None
        return result

    def last(self, dims: Sequence) -> tuple:
        """Dims in channels-last order."""
        return tuple(dims) if self.channels_last else (dims[0], *dims[2:], dims[1])

    def layout(self, dims: Sequence) -> tuple:
        """Channels-last dims in this op's order."""
        return tuple(dims) if self.channels_last else (dims[0], dims[-1], *dims[1:-1])

    def to_last(self, x: np.ndarray) -> np.ndarray:
        return x if self.channels_last else np.moveaxis(x, 1, -1)

    def from_last(self, x: np.ndarray) -> np.ndarray:
        return x if self.channels_last else np.moveaxis(x, -1, 1)


def _checked_spec(attrs: dict, op_type: str, t: Tensor) -> _Spec:
    try:
        return _Spec(attrs)
    except ValueError as err:
        raise ValueError(f"{err} ('{op_type}' of {t.name})") from None


def _check_rank(t: Tensor, rank: int, op_type: str, arg: str) -> None:
    if t.shape.ndims not in (None, rank):
        raise ValueError(f"Shape must be rank {rank} but is rank {t.shape.ndims} for "
                         f"'{op_type}' input '{arg}' ({t.name} with shape {t.shape})")


def _static_dims(spec: _Spec, t: Tensor) -> tuple:
    dims = t.shape.as_tuple()
    return (None,) * 5 if dims is None else spec.last(dims)


def _shape_from_sizes(sizes: Tensor, op_type: str) -> TensorShape:
    check_dtype_in(sizes, _INDEX_TYPES, op_type, "sizes")
    values = static_ints(sizes)
    return TensorShape([None] * 5) if values is None else TensorShape(values)


def _public_attrs(op: Operation) -> dict:
    return {k: v for k, v in op.attrs.items() if not k.startswith("_")}


def _padded(x: np.ndarray, axes: Sequence[_Axis], pad_value=0) -> np.ndarray:
    """Channels-last ``x`` with the axes' padding around its spatial axes."""
    widths = [(a.before, a.after) for a in axes]
    if any(b or e for b, e in widths):
        x = np.pad(x, [(0, 0), *widths, (0, 0)], constant_values=pad_value)
    return x


def _taps(padded: np.ndarray, axes: Sequence[_Axis]):
    """``(tap, view)`` per filter tap (row-major over the window): the [N, *out, C] view
    of the padded input that tap reads."""
    for tap, index in enumerate(itertools.product(*(range(a.size) for a in axes))):
        yield tap, padded[(slice(None),) + tuple(a.reads(t) for a, t in zip(
            axes, index, strict=True))]


def _im2col(x: np.ndarray, axes: Sequence[_Axis]) -> np.ndarray:
    """Every receptive field of channels-last ``x`` as a row of a contiguous
    [N*prod(out), prod(size)*C] matrix, ordered (taps..., channel) like a filter's rows."""
    d = len(axes)
    spans = tuple((a.size - 1) * a.dilation + 1 for a in axes)
    view = sliding_window_view(_padded(x, axes), spans, axis=tuple(range(1, d + 1)))
    view = view[(slice(None),) + tuple(slice(None, a.stride * (a.out - 1) + 1, a.stride)
                                       for a in axes) + (slice(None),)
                + tuple(slice(None, None, a.dilation) for a in axes)]
    order = (0, *range(1, d + 1), *range(d + 2, 2 * d + 2), d + 1)
    rows = x.shape[0] * int(np.prod([a.out for a in axes]))
    return np.ascontiguousarray(view.transpose(order)).reshape(rows, -1)


def _accumulate_taps(tap_value: Callable, axes: Sequence[_Axis], in_shape: Sequence[int],
                     dtype) -> np.ndarray:
    """The input-shaped sum over taps of ``tap_value(tap)``, each added where that tap
    reads (the adjoint of ``_taps``)."""
    padded = np.zeros((in_shape[0], *(n + a.before + a.after for n, a in zip(
        in_shape[1:-1], axes, strict=True)), in_shape[-1]), dtype)
    for tap, view in _taps(padded, axes):
        view += tap_value(tap)
    return padded[(slice(None),) + tuple(slice(a.before, a.before + n) for n, a in zip(
        in_shape[1:-1], axes, strict=True))]


# ---------------------------------------------------------------------- convolution
def _conv_forward(x: np.ndarray, w: np.ndarray, axes) -> np.ndarray:
    out = (_im2col(x, axes) @ w.reshape(-1, w.shape[-1]))
    return out.reshape((x.shape[0], *(a.out for a in axes), w.shape[-1]))


def _conv_backprop_input(dy: np.ndarray, w: np.ndarray, axes, in_shape) -> np.ndarray:
    """Each receptive field's gradient is one product; it is added back where it read."""
    taps = int(np.prod(w.shape[:-2]))
    fields = (dy.reshape(-1, dy.shape[-1]) @ w.reshape(-1, w.shape[-1]).T).reshape(
        dy.shape[:-1] + (taps, w.shape[-2]))
    return _accumulate_taps(lambda tap: fields[..., tap, :], axes, in_shape, dy.dtype)


def _conv_backprop_filter(x: np.ndarray, dy: np.ndarray, axes, w_shape) -> np.ndarray:
    return (_im2col(x, axes).T @ dy.reshape(-1, dy.shape[-1])).reshape(w_shape)


def _conv_out_shape(spec: _Spec, x_shape: TensorShape, w_shape: TensorShape,
                    op_type: str) -> TensorShape:
    dims = (None,) * 5 if x_shape.ndims is None else spec.last(x_shape.as_tuple())
    w_dims = w_shape.as_tuple() or (None,) * 5
    context = f"'{op_type}' with input shapes: {x_shape}, {w_shape}"
    if dims[-1] is not None and w_dims[3] is not None and dims[-1] != w_dims[3]:
        raise ValueError(f"Depth of input ({dims[-1]}) is not a multiple of input depth of "
                         f"filter ({w_dims[3]}) for {context}")
    out = spec.out_sizes(dims[1:4], w_dims[:3], context)
    return TensorShape(spec.layout((dims[0], *out, w_dims[4])))


def _check_operands(first: Tensor, second: Tensor, op_type: str, names: tuple) -> None:
    check_dtype_in(first, FLOATING, op_type, names[0])
    if second.dtype is not first.dtype:
        raise TypeError(f"Input '{names[1]}' of '{op_type}' Op has type {second.dtype.name} "
                        f"that does not match type {first.dtype.name} of argument "
                        f"'{names[0]}'. ({names[1]}: {second.name}, {names[0]}: {first.name})")
    _check_rank(first, 5, op_type, names[0])
    _check_rank(second, 5, op_type, names[1])


def _infer_conv3d(inputs, attrs):
    x, w = inputs
    _check_operands(x, w, "Conv3D", ("input", "filter"))
    spec = _checked_spec(attrs, "Conv3D", x)
    return [(x.dtype, _conv_out_shape(spec, x.shape, w.shape, "Conv3D"))]


def _infer_conv3d_input(inputs, attrs):
    sizes, w, dy = inputs
    op_type = "Conv3DBackpropInputV2"
    _check_operands(w, dy, op_type, ("filter", "out_backprop"))
    shape = _shape_from_sizes(sizes, op_type)
    expected = _conv_out_shape(_checked_spec(attrs, op_type, dy), shape, w.shape, op_type)
    if not expected.is_compatible_with(dy.shape):
        raise ValueError(f"'{op_type}': out_backprop {dy.name} has shape {dy.shape}, but an "
                         f"input of shape {shape} convolved with filter {w.name} of shape "
                         f"{w.shape} has shape {expected}")
    return [(w.dtype, shape)]


def _infer_conv3d_filter(inputs, attrs):
    x, sizes, dy = inputs
    op_type = "Conv3DBackpropFilterV2"
    _check_operands(x, dy, op_type, ("input", "out_backprop"))
    _checked_spec(attrs, op_type, x)
    return [(x.dtype, _shape_from_sizes(sizes, op_type))]


def _conv3d_kernel(x, w, **attrs):
    spec = _Spec(attrs)
    x = spec.to_last(x)
    return spec.from_last(_conv_forward(x, w, spec.axes(x.shape[1:4], w.shape[:3])))


def _conv3d_input_kernel(sizes, w, dy, **attrs):
    spec = _Spec(attrs)
    in_shape = spec.last([int(s) for s in sizes])
    dy = spec.to_last(dy)
    axes = spec.axes(in_shape[1:4], w.shape[:3])
    if dy.shape[1:4] != tuple(a.out for a in axes):
        raise ValueError(f"out_backprop has spatial shape {dy.shape[1:4]}, but the "
                         f"convolution of an input of shape {tuple(sizes)} has "
                         f"{tuple(a.out for a in axes)}")
    return spec.from_last(_conv_backprop_input(dy, w, axes, in_shape))


def _conv3d_filter_kernel(x, sizes, dy, **attrs):
    spec = _Spec(attrs)
    x, dy = spec.to_last(x), spec.to_last(dy)
    w_shape = tuple(int(s) for s in sizes)
    return _conv_backprop_filter(x, dy, spec.axes(x.shape[1:4], w_shape[:3]), w_shape)


define_op("Conv3D", infer=_infer_conv3d, kernel=_conv3d_kernel)
define_op("Conv3DBackpropInputV2", infer=_infer_conv3d_input, kernel=_conv3d_input_kernel)
define_op("Conv3DBackpropFilterV2", infer=_infer_conv3d_filter, kernel=_conv3d_filter_kernel)


def _conv3d_op(x: Tensor, w: Tensor, attrs: dict) -> Tensor:
    return apply_op("Conv3D", [x, w], name="Conv3D", **attrs)


def _conv3d_input_op(x: Tensor, w: Tensor, dy: Tensor, attrs: dict) -> Tensor:
    return apply_op("Conv3DBackpropInputV2", [array.shape_of_input(x), w, dy],
                    name="Conv3DBackpropInputV2", **attrs)


def _conv3d_filter_op(x: Tensor, w: Tensor, dy: Tensor, attrs: dict) -> Tensor:
    return apply_op("Conv3DBackpropFilterV2", [x, array.shape_of_input(w), dy],
                    name="Conv3DBackpropFilterV2", **attrs)


@RegisterGradient("Conv3D")
def _conv3d_grad(op, grad):
    """The convolution is bilinear: each operand's gradient is a backprop op."""
    x, w = op.inputs
    attrs = _public_attrs(op)
    return (_conv3d_input_op(x, w, grad, attrs) if gradient_needed(x) else None,
            _conv3d_filter_op(x, w, grad, attrs) if gradient_needed(w) else None)


@RegisterGradient("Conv3DBackpropInputV2")
def _conv3d_input_grad(op, grad):
    _, w, dy = op.inputs
    attrs = _public_attrs(op)
    return (None, _conv3d_filter_op(grad, w, dy, attrs) if gradient_needed(w) else None,
            _conv3d_op(grad, w, attrs) if gradient_needed(dy) else None)


@RegisterGradient("Conv3DBackpropFilterV2")
def _conv3d_filter_grad(op, grad):
    x, _, dy = op.inputs
    attrs = _public_attrs(op)
    return (_conv3d_input_op(x, grad, dy, attrs) if gradient_needed(x) else None, None,
            _conv3d_op(x, grad, attrs) if gradient_needed(dy) else None)


def _five(value, arg: str, data_format: str) -> list[int]:
    """An int or a list of 1, 3 or 5 ints as the 5 per-dimension values of a 3-D op."""
    values = [value] if isinstance(value, (int, np.integer)) else list(value)
    if len(values) == 1:
        values = values * 3
    if len(values) == 3:
        values = [1, *values, 1] if data_format == "NDHWC" else [1, 1, *values]
    elif len(values) != 5:
        raise ValueError(f"{arg} should be of length 1, 3 or 5. Received: {arg}={value} of "
                         f"length {len(values)}")
    return [int(v) for v in values]


def _window_attrs(strides, padding, data_format: str, op_type: str) -> dict:
    """The ``strides``, ``padding`` and ``data_format`` attrs of a 3-D op, checked."""
    if strides is None:
        raise ValueError(f"strides of '{op_type}' must be provided.")
    if data_format not in _FORMATS_3D:
        raise ValueError(f"data_format of '{op_type}' must be 'NDHWC' or 'NCDHW', got "
                         f"{data_format!r}")
    if padding not in ("SAME", "VALID"):
        raise ValueError(f"Attr 'padding' of '{op_type}' Op passed string '{padding}' not "
                         "in: \"SAME\", \"VALID\".")
    return {"strides": _five(strides, "strides", data_format), "padding": padding,
            "data_format": data_format}


def _conv3d_attrs(strides, padding, data_format: str, dilations, op_type: str) -> dict:
    return {**_window_attrs(strides, padding, data_format, op_type),
            "dilations": _five(1 if dilations is None else dilations, "dilations",
                               data_format)}


def _alias(arg: str, value, other: str, other_value):
    """One of two spellings of an argument (TF renamed several, keeping both)."""
    if value is not None and other_value is not None:
        raise ValueError(f"Cannot specify both '{arg}' and '{other}'.")
    if value is None and other_value is None:
        raise ValueError(f"'{arg}' must be provided.")
    return value if value is not None else other_value


@constructor("Conv3D", "input", "filter")
def conv3d(input, filter=None, strides=None, padding=None,  # noqa: A002 - TF's names
           data_format: str = "NDHWC", dilations=None, name: Optional[str] = None,
           filters=None) -> Tensor:
    """3-D convolution (cross-correlation) of ``input`` with ``filter``
    [kd, kh, kw, in, out]; ``strides``/``dilations`` are 5 per-dimension values."""
    filter = _alias("filter", filter, "filters", filters)
    x, w = conv_operands(input, filter, "Conv3D", "input")
    return apply_op("Conv3D", [x, w], name=name or "Conv3D",
                    **_conv3d_attrs(strides, padding, data_format, dilations, "Conv3D"))


@constructor("Conv3DBackpropFilterV2", "input", "filter_sizes", "out_backprop")
def conv3d_backprop_filter_v2(input, filter_sizes, out_backprop, strides,  # noqa: A002
                              padding, data_format: str = "NDHWC", dilations=None,
                              name: Optional[str] = None) -> Tensor:
    """The gradient of ``conv3d`` with respect to its filter, of shape ``filter_sizes``."""
    x, dy = conv_operands(input, out_backprop, "Conv3DBackpropFilterV2", "input")
    return apply_op("Conv3DBackpropFilterV2", [x, sizes_tensor(filter_sizes, x), dy],
                    name=name or "Conv3DBackpropFilterV2",
                    **_conv3d_attrs(strides, padding, data_format, dilations,
                                    "Conv3DBackpropFilterV2"))


@constructor("conv3d_transpose", "value", "filter", "output_shape", single_op=False)
def conv3d_transpose(value=None, filter=None, output_shape=None, strides=None,  # noqa: A002
                     padding: str = "SAME", data_format: str = "NDHWC",
                     name: Optional[str] = None, input=None, filters=None,  # noqa: A002
                     dilations=None) -> Tensor:
    """The transpose of ``conv3d``: ``filter`` is [kd, kh, kw, out, in]."""
    value = _alias("value", value, "input", input)
    filter = _alias("filter", filter, "filters", filters)
    if output_shape is None:
        raise ValueError("output_shape of conv3d_transpose must be provided.")
    with name_scope(name, "conv3d_transpose", [value, filter, output_shape]) as scope:
        dy, w = conv_operands(value, filter, "Conv3DBackpropInputV2", "value")
        return apply_op("Conv3DBackpropInputV2", [sizes_tensor(output_shape, dy), w, dy],
                        name=scope,
                        **_conv3d_attrs(strides, padding, data_format, dilations,
                                        "Conv3DBackpropInputV2"))


# -------------------------------------------------------------------------- pooling
def _infer_pool3d(op_type: str, allowed) -> Callable:
    def infer(inputs, attrs):
        x = inputs[0]
        check_dtype_in(x, allowed, op_type, "input")
        _check_rank(x, 5, op_type, "input")
        spec = _checked_spec(attrs, op_type, x)
        dims = _static_dims(spec, x)
        out = spec.out_sizes(dims[1:4], spec.ksize, f"'{op_type}' of {x.name} with shape "
                                                     f"{x.shape} and ksize {attrs['ksize']}")
        return [(x.dtype, TensorShape(spec.layout((dims[0], *out, dims[4]))))]
    return infer


def _lowest(dtype: np.dtype):
    return -np.inf if np.issubdtype(dtype, np.floating) else np.iinfo(dtype).min


def _max_pool3d_kernel(x, **attrs):
    """Folds the taps with ``np.maximum`` (NaN wins, as in a max reduction)."""
    spec = _Spec(attrs)
    x = spec.to_last(x)
    axes = spec.axes(x.shape[1:4], spec.ksize)
    result = None
    for _, view in _taps(_padded(x, axes, _lowest(x.dtype)), axes):
        result = view.copy() if result is None else np.maximum(result, view, out=result)
    return spec.from_last(result)


def _winning_taps(x: np.ndarray, axes: Sequence[_Axis]) -> np.ndarray:
    """The tap of each window's maximum (the first one on ties; a NaN beats numbers)."""
    best = winner = None
    for tap, view in _taps(_padded(x, axes, _lowest(x.dtype)), axes):
        if best is None:
            best, winner = view.copy(), np.zeros(view.shape, np.int32)
            continue
        wins = np.greater(view, best) | (np.isnan(view) & ~np.isnan(best))
        winner[wins] = tap
        best = np.where(wins, view, best)
    return winner


def _max_pool3d_grad_kernel(x, y, dy, **attrs):
    """Each window's gradient goes to its maximum in ``x`` (``y`` is not read)."""
    spec = _Spec(attrs)
    x, dy = spec.to_last(x), spec.to_last(dy)
    axes = spec.axes(x.shape[1:4], spec.ksize)
    winner = _winning_taps(x, axes)
    return spec.from_last(_accumulate_taps(
        lambda tap: np.where(winner == tap, dy, 0).astype(dy.dtype), axes, x.shape, dy.dtype))


def _max_pool3d_grad_grad_kernel(x, y, ddx, **attrs):
    """Reads ``ddx`` (input-shaped) at each window's maximum."""
    spec = _Spec(attrs)
    x, ddx = spec.to_last(x), spec.to_last(ddx)
    axes = spec.axes(x.shape[1:4], spec.ksize)
    winner = _winning_taps(x, axes)
    result = np.zeros(winner.shape, ddx.dtype)
    for tap, view in _taps(_padded(ddx, axes), axes):
        np.copyto(result, view, where=winner == tap)
    return spec.from_last(result)


def _window_counts(axes: Sequence[_Axis], in_sizes: Sequence[int]) -> np.ndarray:
    """How many real (unpadded) inputs each window covers, as [1, *out, 1]."""
    per_axis = []
    for a, size in zip(axes, in_sizes, strict=True):
        start = np.arange(a.out) * a.stride - a.before
        per_axis.append(np.clip(start + a.size, 0, size) - np.clip(start, 0, size))
    counts = per_axis[0][:, None, None] * per_axis[1][None, :, None] * per_axis[2][None, None, :]
    return counts[None, ..., None]


def _avg_pool3d_kernel(x, **attrs):
    """Mean over each window's real inputs: SAME padding is not counted."""
    spec = _Spec(attrs)
    x = spec.to_last(x)
    axes = spec.axes(x.shape[1:4], spec.ksize)
    total = None
    for _, view in _taps(_padded(x, axes), axes):
        total = view.copy() if total is None else np.add(total, view, out=total)
    return spec.from_last((total / _window_counts(axes, x.shape[1:4])).astype(x.dtype))


def _avg_pool3d_grad_kernel(sizes, dy, **attrs):
    spec = _Spec(attrs)
    in_shape = spec.last([int(s) for s in sizes])
    dy = spec.to_last(dy)
    axes = spec.axes(in_shape[1:4], spec.ksize)
    share = (dy / _window_counts(axes, in_shape[1:4])).astype(dy.dtype)
    return spec.from_last(_accumulate_taps(lambda tap: share, axes, in_shape, dy.dtype))


def _infer_avg_pool3d_grad(inputs, attrs):
    sizes, dy = inputs
    check_dtype_in(dy, FLOATING, "AvgPool3DGrad", "grad")
    return [(dy.dtype, _shape_from_sizes(sizes, "AvgPool3DGrad"))]


define_op("MaxPool3D", infer=_infer_pool3d("MaxPool3D", FLOATING), kernel=_max_pool3d_kernel)
define_op("MaxPool3DGrad", infer=lambda inputs, attrs: [(inputs[2].dtype, inputs[0].shape)],
          kernel=_max_pool3d_grad_kernel)
define_op("MaxPool3DGradGrad",
          infer=lambda inputs, attrs: [(inputs[2].dtype, inputs[1].shape)],
          kernel=_max_pool3d_grad_grad_kernel)
define_op("AvgPool3D", infer=_infer_pool3d("AvgPool3D", FLOATING), kernel=_avg_pool3d_kernel)
define_op("AvgPool3DGrad", infer=_infer_avg_pool3d_grad, kernel=_avg_pool3d_grad_kernel)


@RegisterGradient("MaxPool3D")
def _max_pool3d_grad(op, grad):
    return apply_op("MaxPool3DGrad", [op.inputs[0], op.outputs[0], grad],
                    name="MaxPool3DGrad", **_public_attrs(op))


def _max_pool3d_backward_grad(op, grad, op_type: str):
    """MaxPool3DGrad and MaxPool3DGradGrad are linear in their last input and piecewise
    constant in the others; each one's gradient is the other one."""
    x, y, _ = op.inputs
    return (array.zeros_like(x), array.zeros_like(y),
            apply_op(op_type, [x, y, grad], name=op_type, **_public_attrs(op)))


@RegisterGradient("MaxPool3DGrad")
def _max_pool3d_grad_grad(op, grad):
    return _max_pool3d_backward_grad(op, grad, "MaxPool3DGradGrad")


@RegisterGradient("MaxPool3DGradGrad")
def _max_pool3d_grad_grad_grad(op, grad):
    return _max_pool3d_backward_grad(op, grad, "MaxPool3DGrad")


@RegisterGradient("AvgPool3D")
def _avg_pool3d_grad(op, grad):
    return apply_op("AvgPool3DGrad", [array.shape_of_input(op.inputs[0]), grad],
                    name="AvgPool3DGrad", **_public_attrs(op))


@RegisterGradient("AvgPool3DGrad")
def _avg_pool3d_grad_grad(op, grad):
    return None, apply_op("AvgPool3D", [grad], name="AvgPool3D", **_public_attrs(op))


def _pool3d(op_type: str, x, ksize, strides, padding, data_format: str,
            name: Optional[str]) -> Tensor:
    x_t = convert_to_tensor(x, name="input")
    return apply_op(op_type, [x_t], name=name or op_type, ksize=_five(ksize, "ksize", data_format),
                    **_window_attrs(strides, padding, data_format, op_type))


@constructor("MaxPool3D", "input")
def max_pool3d(input, ksize, strides, padding, data_format: str = "NDHWC",  # noqa: A002
               name: Optional[str] = None) -> Tensor:
    """Maximum over ``ksize`` windows of a 5-D tensor ('SAME' padding never wins)."""
    return _pool3d("MaxPool3D", input, ksize, strides, padding, data_format, name)


@constructor("AvgPool3D", "input")
def avg_pool3d(input, ksize, strides, padding, data_format: str = "NDHWC",  # noqa: A002
               name: Optional[str] = None) -> Tensor:
    """Mean over ``ksize`` windows of a 5-D tensor (padding is not counted)."""
    return _pool3d("AvgPool3D", input, ksize, strides, padding, data_format, name)


# ------------------------------------------------------- composed from the 2-D ops
def _width_value(value, arg: str, channels_last: bool) -> int:
    """A 1-D window value: an int or a list of 1 or 3 ints."""
    values = [value] if isinstance(value, (int, np.integer)) else list(value)
    if len(values) == 3:
        return int(values[1] if channels_last else values[2])
    if len(values) != 1:
        raise ValueError(f"{arg} should be of length 1 or 3. Received: {arg}={value} of "
                         f"length {len(values)}")
    return int(values[0])


def _pool1d(pool2d: Callable, default_name: str, x, ksize, strides, padding,
            data_format: str, name: Optional[str]) -> Tensor:
    """A 1-D pooling as TF builds it: expand to height 1, pool in 2-D, squeeze."""
    if data_format not in ("NWC", "NCW"):
        raise ValueError(f'data_format must be "NWC" or "NCW", got {data_format!r}.')
    channels_last = data_format == "NWC"
    height_axis = 1 if channels_last else 2
    with name_scope(name, default_name, [x]) as scope:
        x_t = convert_to_tensor(x, name="input")
        _check_rank(x_t, 3, default_name, "input")
        pooled = pool2d(array.expand_dims(x_t, height_axis),
                        ksize=[1, _width_value(ksize, "ksize", channels_last)],
                        strides=[1, _width_value(strides, "strides", channels_last)],
                        padding=padding, data_format="NHWC" if channels_last else "NCHW",
                        name=scope)
        return array.squeeze(pooled, [height_axis])


@constructor("MaxPool1d", "input", single_op=False)
def max_pool1d(input, ksize, strides, padding, data_format: str = "NWC",  # noqa: A002
               name: Optional[str] = None) -> Tensor:
    """Maximum over ``ksize`` windows of a 3-D [batch, width, channels] tensor."""
    return _pool1d(max_pool, "MaxPool1d", input, ksize, strides, padding, data_format, name)


@constructor("AvgPool1D", "input", single_op=False)
def avg_pool1d(input, ksize, strides, padding, data_format: str = "NWC",  # noqa: A002
               name: Optional[str] = None) -> Tensor:
    """Mean over ``ksize`` windows of a 3-D [batch, width, channels] tensor."""
    return _pool1d(avg_pool, "AvgPool1D", input, ksize, strides, padding, data_format, name)


@constructor("separable_conv2d", "input", "depthwise_filter", "pointwise_filter",
             single_op=False)
def separable_conv2d(input, depthwise_filter, pointwise_filter, strides,  # noqa: A002
                     padding, rate=None, name: Optional[str] = None,
                     data_format: Optional[str] = None, dilations=None) -> Tensor:
    """A depthwise convolution ([kh, kw, in, multiplier]) followed by a 1x1 pointwise
    one ([1, 1, in * multiplier, out]), as TF composes them."""
    data_format = data_format or "NHWC"
    dilations = None if rate is None and dilations is None else \
        _alias("dilations", dilations, "rate", rate)
    with name_scope(name, "separable_conv2d", [input, depthwise_filter,
                                               pointwise_filter]) as scope:
        x = convert_to_tensor(input, name="input")
        check_dtype_in(x, FLOATING, "separable_conv2d", "input")
        pointwise = as_tensor(pointwise_filter, dtype=None if isinstance(
            pointwise_filter, Tensor) else x.dtype, name="pointwise_filter", like=x)
        _check_rank(pointwise, 4, "separable_conv2d", "pointwise_filter")
        dims = pointwise.shape.as_tuple()
        if dims is not None and (dims[0], dims[1]) != (1, 1):
            raise ValueError(f"pointwise_filter must be of spatial size 1x1, got shape "
                             f"{pointwise.shape} ({pointwise.name})")
        depthwise = depthwise_conv2d(x, depthwise_filter, strides, padding,
                                     data_format=data_format, dilations=dilations,
                                     name="depthwise")
        return conv2d(depthwise, pointwise, [1, 1, 1, 1], padding="VALID",
                      data_format=data_format, name=scope)


def pool(input, window_shape, pooling_type: str, padding: str,  # noqa: A002 - TF's names
         dilation_rate=None, strides=None, name: Optional[str] = None,
         data_format: Optional[str] = None, dilations=None) -> Tensor:
    """N-D pooling (N = 1, 2 or 3) with ``pooling_type`` 'MAX' or 'AVG'; dilated windows
    are not supported (a ValueError)."""
    rate = _alias("dilation_rate", dilation_rate, "dilations", dilations) \
        if dilation_rate is not None or dilations is not None else None
    window = [int(v) for v in window_shape]
    rank = len(window)
    if rank not in (1, 2, 3):
        raise ValueError(f"window_shape must have 1, 2 or 3 entries, got {window_shape}")
    if rate is not None and any(int(r) != 1 for r in rate):
        raise ValueError(f"pool: dilation_rate {list(rate)} is not supported (only 1s)")
    if pooling_type not in ("MAX", "AVG"):
        raise ValueError(f"Invalid pooling_type: {pooling_type}")
    stride = [1] * rank if strides is None else [int(s) for s in strides]
    if len(stride) != rank:
        raise ValueError(f"strides must have {rank} entries, got {strides}")
    channels_last = data_format is None or not data_format.startswith("NC")
    format_of = {1: ("NWC", "NCW"), 2: ("NHWC", "NCHW"), 3: ("NDHWC", "NCDHW")}[rank]
    data_format = format_of[0 if channels_last else 1]
    name = name or ("max_pool" if pooling_type == "MAX" else "avg_pool")
    ops = {(1, "MAX"): max_pool1d, (1, "AVG"): avg_pool1d, (2, "MAX"): max_pool,
           (2, "AVG"): avg_pool, (3, "MAX"): max_pool3d, (3, "AVG"): avg_pool3d}
    if rank == 1:
        window, stride = window[0], stride[0]
    return ops[rank, pooling_type](input, window, stride, padding, data_format=data_format,
                                   name=name)
