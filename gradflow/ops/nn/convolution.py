"""Sliding-window geometry and convolutions (im2col: one matrix product per convolution)."""
from __future__ import annotations

from typing import Callable, NamedTuple, Optional, Sequence

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from gradflow.framework import dtypes
from gradflow.framework.constant import convert_to_tensor
from gradflow.framework.graph import Tensor, name_scope
from gradflow.framework.registry import RegisterGradient, define_op, gradient_needed
from gradflow.framework.tensor_shape import TensorShape
from gradflow.ops import array
from gradflow.ops.common import (FLOATING, apply_op, as_tensor, check_dtype_in, constructor,
                                 static_ints)
from gradflow.ops.nn.helpers import INDEX_TYPES, check_matching_dtype, check_rank, public_attrs


# ------------------------------------------------------------ sliding-window geometry
class Window(NamedTuple):
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
                explicit: tuple[int, int]) -> Window:
    span = _span(size, dilation)
    if padding == "SAME":
        out = -(-in_size // stride)
        total = max((out - 1) * stride + span - in_size, 0)
        return Window(size, stride, dilation, total // 2, total - total // 2, out)
    before, after = explicit
    padded = in_size + before + after
    if padded < span:
        raise ValueError(f"Negative dimension size caused by subtracting {span} from {padded}")
    return Window(size, stride, dilation, before, after, (padded - span) // stride + 1)


class WindowSpec:
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

    def windows(self, in_hw: Sequence[int], size_hw: Sequence[int]) -> tuple[Window, Window]:
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


def checked_spec(attrs: dict, op_type: str, t: Tensor) -> WindowSpec:
    """The op's window attrs, or a ValueError naming the op type and its input."""
    try:
        return WindowSpec(attrs)
    except ValueError as err:
        raise ValueError(f"{err} ('{op_type}' of {t.name})") from None


def nhwc_dims(spec: WindowSpec, t: Tensor) -> tuple:
    dims = t.shape.as_tuple()
    return (None,) * 4 if dims is None else spec.nhwc(dims)


def shape_from_sizes(sizes: Tensor, op_type: str) -> TensorShape:
    check_dtype_in(sizes, INDEX_TYPES, op_type, "sizes")
    values = static_ints(sizes)
    return TensorShape([None] * 4) if values is None else TensorShape(values)


def pad_windows(x: np.ndarray, windows: Sequence[Window], pad_value=0) -> np.ndarray:
    """NHWC ``x`` with the windows' padding around its spatial axes."""
    h, w = windows
    if h.before or h.after or w.before or w.after:
        x = np.pad(x, ((0, 0), (h.before, h.after), (w.before, w.after), (0, 0)),
                   constant_values=pad_value)
    return x


def window_taps(padded: np.ndarray, windows: Sequence[Window]):
    """``(tap, view)`` per filter tap: the [N, Ho, Wo, C] view of the padded input that
    tap reads, one position per output position (taps numbered row by row)."""
    h, w = windows
    for i in range(h.size):
        for j in range(w.size):
            yield i * w.size + j, padded[:, h.reads(i), w.reads(j)]


def patches(x: np.ndarray, windows: Sequence[Window], pad_value=0) -> np.ndarray:
    """Every output position's receptive field of NHWC ``x``: an [N, Ho, Wo, C, kh, kw] view."""
    h, w = windows
    view = sliding_window_view(pad_windows(x, windows, pad_value), (h.span, w.span), axis=(1, 2))
    return view[:, :h.stride * (h.out - 1) + 1:h.stride, :w.stride * (w.out - 1) + 1:w.stride,
                :, ::h.dilation, ::w.dilation]


# Up to this many input channels the patch matrix is built channel-major (see _im2col).
_CHANNEL_MAJOR_MAX_CHANNELS = 4


def _im2col(x: np.ndarray, windows: Sequence[Window]) -> np.ndarray:
    """The receptive fields of NHWC ``x`` as an [N*Ho*Wo, kh*kw*C] matrix, each row ordered
    (tap row, tap column, channel) like an HWIO filter's rows, so that a convolution is
    one matrix product.

    With many channels the matrix is C-ordered, copied from the window view in runs of
    whole channel rows. With few, such runs are a value or three long, so it is built
    transposed ([kh*kw*C, N*Ho*Wo], returned as its transpose view, which BLAS reads
    without a copy): every (tap, channel) row is then one copy of a whole image-sized
    window view into contiguous memory (10x faster for one channel and a 5x5 filter).
    """
    h, w = windows
    n, channels = x.shape[0], x.shape[3]
    rows, row_size = n * h.out * w.out, h.size * w.size * channels
    if channels <= _CHANNEL_MAJOR_MAX_CHANNELS:
        cols = np.empty((h.size * w.size, channels, n, h.out, w.out), x.dtype)
        for tap, view in window_taps(pad_windows(x, windows), windows):
            cols[tap] = view.transpose(3, 0, 1, 2)
        return cols.reshape(row_size, rows).T
    return np.ascontiguousarray(patches(x, windows).transpose(0, 1, 2, 4, 5, 3)).reshape(
        rows, row_size)


def accumulate_taps(tap_value: Callable, windows: Sequence[Window], in_shape: Sequence[int],
                     dtype) -> np.ndarray:
    """The NHWC input-shaped sum over taps of ``tap_value(tap)`` ([N, Ho, Wo, C]), each
    added where that tap reads: the adjoint of ``window_taps``."""
    h, w = windows
    n, height, width, channels = in_shape
    padded = np.zeros((n, height + h.before + h.after, width + w.before + w.after, channels),
                      dtype)
    for tap, view in window_taps(padded, windows):
        view += tap_value(tap)
    return padded[:, h.before:h.before + height, w.before:w.before + width]


def window_list(value, arg: str, data_format: str) -> list[int]:
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


def padding_attrs(padding, data_format: str, op_type: str, explicit_ok: bool = True) -> dict:
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


def alias(arg: str, value, other: str, other_value):
    """One of two spellings of an argument (TF renamed several, keeping both)."""
    if value is not None and other_value is not None:
        raise ValueError(f"Cannot specify both '{arg}' and '{other}'.")
    if value is None and other_value is None:
        raise ValueError(f"'{arg}' must be provided.")
    return value if value is not None else other_value


# ---------------------------------------------------------------------- convolutions
class _ConvKind(NamedTuple):
    """How a convolution family contracts receptive fields with its filter (NHWC arrays,
    HWIO filters, ``windows`` from ``WindowSpec.windows``)."""

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
    channel axes swapped; when the input has fewer channels than the output, scattering
    one product's receptive-field gradients (``_scatter_fields``) moves less memory and
    multiplies wider matrices. Strided, the full correlation would multiply mostly
    zeros: there each receptive field's gradient comes from one product and is added
    back where it read."""
    kh, kw, c_in, c_out = w.shape
    if all(win.stride == 1 for win in windows):
        if c_in < c_out:
            return _scatter_fields(dy, w, windows, in_shape)
        cropped, full_windows = _full_correlation(dy, windows, in_shape[1:3])
        return _conv_forward(cropped, w[::-1, ::-1].transpose(0, 1, 3, 2), full_windows)
    fields = (_as_rows(dy) @ _filter_matrix(w).T).reshape(dy.shape[:3] + (kh * kw, c_in))
    return accumulate_taps(lambda tap: fields[:, :, :, tap], windows, in_shape, dy.dtype)


def _scatter_fields(dy: np.ndarray, w: np.ndarray, windows, in_shape) -> np.ndarray:
    """The stride-1 input gradient as one product and a contiguous add per filter tap.

    ``dy`` is laid on the padded input's width (zeros in the extra columns), so output
    position (oh, ow) and the padded-input position its tap (i, j) reads lie a fixed
    flat distance apart in every image. The product gives each tap's gradient channel
    by channel ([taps*C_in, N, Ho*Wp]), and each tap adds it, as one shifted block,
    into a channel-major padded input; the zero columns only add zeros.
    """
    h, wd = windows
    n, height, width, c_in = in_shape
    kh, kw, _, c_out = w.shape
    padded_h, padded_w = height + h.before + h.after, width + wd.before + wd.after
    if padded_w == wd.out:
        laid = dy
    else:
        laid = np.zeros((n, h.out, padded_w, c_out), dy.dtype)
        laid[:, :, :wd.out] = dy
    length = h.out * padded_w
    fields = (_filter_matrix(w) @ laid.reshape(n * length, c_out).T).reshape(
        kh, kw, c_in, n, length)
    # a tap's block ends at most (kw - 1) * dilation past the last image's grid
    grid = np.zeros((c_in, n, padded_h * padded_w + (kw - 1) * wd.dilation), dy.dtype)
    for i in range(kh):
        for j in range(kw):
            start = i * h.dilation * padded_w + j * wd.dilation
            grid[:, :, start:start + length] += fields[i, j]
    image = grid[:, :, :padded_h * padded_w].reshape(c_in, n, padded_h, padded_w)
    return np.ascontiguousarray(image[:, :, h.before:h.before + height,
                                      wd.before:wd.before + width].transpose(1, 2, 3, 0))


def _full_correlation(dy: np.ndarray, windows, in_hw) -> tuple:
    """Stride-1 windows over ``dy`` with one output per input position, and ``dy``
    cropped where their padding would be negative (outputs that read only padding)."""
    crops, full_windows = [], []
    for win, size in zip(windows, in_hw):
        reach = (win.size - 1) * win.dilation
        before = reach - win.before
        after = size + reach - before - win.out
        crops.append(slice(max(-before, 0), win.out - max(-after, 0)))
        full_windows.append(Window(win.size, 1, win.dilation, max(before, 0), max(after, 0),
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
    per_multiplier = np.einsum("nhwcij,ijcm->nhwcm", patches(x, windows), w)
    return per_multiplier.reshape(x.shape[0], h.out, wd.out, w.shape[2] * w.shape[3])


def _depthwise_backprop_input(dy: np.ndarray, w: np.ndarray, windows,
                              in_shape) -> np.ndarray:
    per_tap = w.reshape((-1,) + w.shape[2:])  # [kh*kw, C, M]
    per_multiplier = _per_multiplier(dy, w.shape[2])
    return accumulate_taps(lambda tap: np.einsum("nhwcm,cm->nhwc", per_multiplier,
                                                  per_tap[tap]),
                            windows, in_shape, dy.dtype)


_CONV = _ConvKind(forward=_conv_forward, backprop_input=_conv_backprop_input,
                  backprop_filter=_conv_backprop_filter, out_channels=lambda dims: dims[3])


_DEPTHWISE = _ConvKind(
    forward=_depthwise_forward,
    backprop_input=_depthwise_backprop_input,
    backprop_filter=lambda x, dy, windows: np.einsum(
        "nhwcij,nhwcm->ijcm", patches(x, windows), _per_multiplier(dy, x.shape[3])),
    out_channels=lambda dims: None if None in dims[2:] else dims[2] * dims[3])


def _conv_output_shape(kind: _ConvKind, spec: WindowSpec, x_shape: TensorShape,
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
    check_matching_dtype(second, first, op_type, second_arg, first_arg)
    check_rank(first, 4, op_type, first_arg)
    check_rank(second, 4, op_type, second_arg)


def _conv_infers(kind: _ConvKind, base: str) -> tuple[Callable, Callable, Callable]:
    def forward(inputs, attrs):
        x, w = inputs
        _check_conv_operands(x, w, base, "input", "filter")
        spec = checked_spec(attrs, base, x)
        return [(x.dtype, _conv_output_shape(kind, spec, x.shape, w.shape, base))]

    def backprop_input(inputs, attrs):
        sizes, w, dy = inputs
        op_type = base + "BackpropInput"
        _check_conv_operands(w, dy, op_type, "filter", "out_backprop")
        shape = shape_from_sizes(sizes, op_type)
        expected = _conv_output_shape(kind, checked_spec(attrs, op_type, dy), shape, w.shape,
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
        return [(x.dtype, shape_from_sizes(sizes, op_type))]

    return forward, backprop_input, backprop_filter


def _conv_kernels(kind: _ConvKind) -> tuple[Callable, Callable, Callable]:
    def forward(x, w, **attrs):
        spec = WindowSpec(attrs)
        x = spec.to_nhwc(x)
        return spec.from_nhwc(kind.forward(x, w, spec.windows(x.shape[1:3], w.shape[:2])))

    def backprop_input(sizes, w, dy, **attrs):
        spec = WindowSpec(attrs)
        in_shape = spec.nhwc([int(s) for s in sizes])
        dy = spec.to_nhwc(dy)
        windows = spec.windows(in_shape[1:3], w.shape[:2])
        if dy.shape[1:3] != tuple(win.out for win in windows):
            raise ValueError(f"out_backprop has spatial shape {dy.shape[1:3]}, but the "
                             f"convolution of an input of shape {tuple(sizes)} has "
                             f"{tuple(win.out for win in windows)}")
        return spec.from_nhwc(kind.backprop_input(dy, w, windows, in_shape))

    def backprop_filter(x, sizes, dy, **attrs):
        spec = WindowSpec(attrs)
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
        attrs = public_attrs(op)
        return (input_grad(x, w, grad, attrs) if gradient_needed(x) else None,
                filter_grad(x, w, grad, attrs) if gradient_needed(w) else None)

    @RegisterGradient(input_type)
    def _input_grad_grad(op, grad):
        _, w, dy = op.inputs
        attrs = public_attrs(op)
        return (None, filter_grad(grad, w, dy, attrs) if gradient_needed(w) else None,
                conv(grad, w, attrs) if gradient_needed(dy) else None)

    @RegisterGradient(filter_type)
    def _filter_grad_grad(op, grad):
        x, _, dy = op.inputs
        attrs = public_attrs(op)
        return (input_grad(x, grad, dy, attrs) if gradient_needed(x) else None, None,
                conv(x, grad, attrs) if gradient_needed(dy) else None)


_define_conv_family("Conv2D", _CONV)


_define_conv_family("DepthwiseConv2dNative", _DEPTHWISE)


def _conv_attrs(strides, padding, data_format: str, dilations, op_type: str) -> dict:
    if strides is None:
        raise ValueError(f"strides of '{op_type}' must be provided.")
    return {"strides": window_list(strides, "strides", data_format),
            "dilations": window_list(1 if dilations is None else dilations, "dilations",
                                      data_format),
            "data_format": data_format, **padding_attrs(padding, data_format, op_type)}


def conv_operands(x, w, op_type: str, x_arg: str = "input") -> tuple[Tensor, Tensor]:
    """A convolution's data and filter as tensors (a Python filter takes the data's dtype)."""
    x_t = convert_to_tensor(x, name=x_arg)
    check_dtype_in(x_t, FLOATING, op_type, x_arg)
    w_t = as_tensor(w, dtype=None if isinstance(w, Tensor) else x_t.dtype, name="filter",
                    like=x_t)
    return x_t, w_t


def sizes_tensor(sizes, like: Tensor) -> Tensor:
    """A backprop op's ``input_sizes``/``filter_sizes`` as an int32 tensor."""
    if isinstance(sizes, Tensor):
        return sizes
    if isinstance(sizes, TensorShape):
        sizes = sizes.as_list()
    if any(isinstance(s, Tensor) for s in sizes):
        return array.stack([as_tensor(s, dtype=dtypes.int32, like=like) for s in sizes])
    return as_tensor(np.asarray(sizes, dtype=np.int32), name="input_sizes", like=like)


@constructor("Conv2D", "input", "filter", "strides", "padding", "use_cudnn_on_gpu", "data_format",
             "dilations", "filters", single_op=False)
def conv2d(input, filter=None, strides=None, padding=None,  # noqa: A002 - TF's names
           use_cudnn_on_gpu: bool = True, data_format: str = "NHWC", dilations=None,
           name: Optional[str] = None, filters=None) -> Tensor:
    """2-D convolution (cross-correlation) of ``input`` with ``filter`` [kh, kw, in, out].

    ``padding`` is 'SAME', 'VALID' or explicit [before, after] pairs per dimension;
    ``strides``/``dilations`` an int or a list of 1, 2 or 4 ints.
    """
    filter = alias("filter", filter, "filters", filters)
    x, w = conv_operands(input, filter, "Conv2D")
    return apply_op("Conv2D", [x, w], name=name or "Conv2D",
                    **_conv_attrs(strides, padding, data_format, dilations, "Conv2D"))


@constructor("Conv2DBackpropInput", "input_sizes", "filter", "out_backprop")
def conv2d_backprop_input(input_sizes, filter=None, out_backprop=None,  # noqa: A002
                          strides=None, padding=None, use_cudnn_on_gpu: bool = True,
                          data_format: str = "NHWC", dilations=None, name: Optional[str] = None,
                          filters=None) -> Tensor:
    """The gradient of ``conv2d`` with respect to its input, of shape ``input_sizes``."""
    filter = alias("filter", filter, "filters", filters)
    dy, w = conv_operands(out_backprop, filter, "Conv2DBackpropInput", "out_backprop")
    return apply_op("Conv2DBackpropInput", [sizes_tensor(input_sizes, dy), w, dy],
                    name=name or "Conv2DBackpropInput",
                    **_conv_attrs(strides, padding, data_format, dilations,
                                  "Conv2DBackpropInput"))


@constructor("Conv2DBackpropFilter", "input", "filter_sizes", "out_backprop")
def conv2d_backprop_filter(input, filter_sizes, out_backprop, strides,  # noqa: A002
                           padding, use_cudnn_on_gpu: bool = True, data_format: str = "NHWC",
                           dilations=None, name: Optional[str] = None) -> Tensor:
    """The gradient of ``conv2d`` with respect to its filter, of shape ``filter_sizes``."""
    x, dy = conv_operands(input, out_backprop, "Conv2DBackpropFilter")
    return apply_op("Conv2DBackpropFilter", [x, sizes_tensor(filter_sizes, x), dy],
                    name=name or "Conv2DBackpropFilter",
                    **_conv_attrs(strides, padding, data_format, dilations,
                                  "Conv2DBackpropFilter"))


@constructor("conv2d_transpose", "value", "filter", "output_shape", "strides", "padding",
             "data_format", "input", "filters", "dilations", single_op=False)
def conv2d_transpose(value=None, filter=None, output_shape=None, strides=None,  # noqa: A002
                     padding="SAME", data_format: str = "NHWC", name: Optional[str] = None,
                     input=None, filters=None, dilations=None) -> Tensor:  # noqa: A002
    """The transpose of ``conv2d`` ("deconvolution"): ``filter`` is [kh, kw, out, in]."""
    value = alias("value", value, "input", input)
    filter = alias("filter", filter, "filters", filters)
    if output_shape is None:
        raise ValueError("output_shape of conv2d_transpose must be provided.")
    dy, w = conv_operands(value, filter, "Conv2DBackpropInput", "value")
    return apply_op("Conv2DBackpropInput", [sizes_tensor(output_shape, dy), w, dy],
                    name=name or "conv2d_transpose",
                    **_conv_attrs(strides, padding, data_format, dilations,
                                  "Conv2DBackpropInput"))


@constructor("depthwise", "input", "filter", "strides", "padding", "rate", "data_format",
             "dilations", single_op=False)
def depthwise_conv2d(input, filter, strides, padding, rate=None,  # noqa: A002 - TF's names
                     name: Optional[str] = None, data_format: Optional[str] = None,
                     dilations=None) -> Tensor:
    """Convolves each input channel with its own ``channel_multiplier`` filters.

    ``filter`` is [kh, kw, in_channels, channel_multiplier]; the output has
    in_channels * channel_multiplier channels. ``rate`` is TF1's name for ``dilations``.
    """
    data_format = data_format or "NHWC"
    dilations = None if rate is None and dilations is None else \
        alias("dilations", dilations, "rate", rate)
    x, w = conv_operands(input, filter, "DepthwiseConv2dNative")
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


@constructor("conv1d", "value", "filters", "stride", "padding", "use_cudnn_on_gpu", "data_format",
             "input", "dilations", single_op=False)
def conv1d(value=None, filters=None, stride=None, padding=None, use_cudnn_on_gpu=None,
           data_format: Optional[str] = None, name: Optional[str] = None,
           input=None, dilations=None) -> Tensor:  # noqa: A002 - TF's names
    """1-D convolution of [batch, width, channels] ``value`` with [kw, in, out] ``filters``,
    computed as a 2-D convolution of height 1."""
    value = alias("value", value, "input", input)
    data_format = data_format or "NWC"
    if data_format not in ("NWC", "NCW", "NHWC", "NCHW"):
        raise ValueError(f'data_format must be "NWC" or "NCW", got {data_format!r}.')
    if stride is None:
        raise ValueError("stride of conv1d must be provided.")
    channels_last = data_format in ("NWC", "NHWC")
    height_axis = 1 if channels_last else 2
    with name_scope(name, "conv1d", [value, filters]):
        x, w = conv_operands(value, filters, "Conv2D")
        result = conv2d(array.expand_dims(x, height_axis), array.expand_dims(w, 0),
                        strides=[1, _width_value(stride, "stride", channels_last)],
                        padding=padding, data_format="NHWC" if channels_last else "NCHW",
                        dilations=[1, _width_value(1 if dilations is None else dilations,
                                                   "dilations", channels_last)])
        return array.squeeze(result, [height_axis])
