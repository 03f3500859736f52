"""Convolutions of any spatial rank as few large matrix products, and the 2-D and
1-D convolution constructors (the 3-D ones are in ``convolution_3d``).

A convolution is one product of the im2col patch matrix with the filter; the filter
gradient multiplies the same patch matrix (kept from the forward pass of the same
step, see ``windows.PatchCache``) with the output gradient; the input gradient is one
product of the output gradient with the filter whose receptive-field gradients are
added back tap by tap, or at stride 1 in 2-D a convolution itself.
"""
from __future__ import annotations

from typing import Callable, NamedTuple, Optional

import numpy as np

from gradflow.framework import dtypes, errors
from gradflow.framework.constant import convert_to_tensor
from gradflow.framework.graph import Tensor, name_scope
from gradflow.framework.registry import RegisterGradient, define_op, gradient_needed
from gradflow.framework.tensor_shape import TensorShape
from gradflow.ops import array
from gradflow.ops.common import FLOATING, apply_op, as_tensor, check_dtype_in, constructor
from gradflow.ops.nn.helpers import check_matching_dtype, check_rank, public_attrs
from gradflow.ops.nn.windows import (PatchCache, Window, WindowSpec, accumulate_taps, alias,
                                     checked_spec, im2col, padding_attrs, patches,
                                     shape_from_sizes, unpad, width_value, window_list,
                                     window_taps)


# ---------------------------------------------------------------------- convolutions
class ConvKind(NamedTuple):
    """How a convolution family contracts receptive fields with its filter
    (channels-last arrays, filters [*size, C_in, C_out], ``windows`` from
    ``WindowSpec.windows``; ``x_key`` is the op's own input array, the key under which
    the forward pass leaves its patch matrix for the filter gradient)."""

    forward: Callable          # (x, filter, windows, x_key) -> [N, *out, C_out]
    backprop_input: Callable   # (dy, filter, windows, input shape) -> input-shaped
    backprop_filter: Callable  # (x, dy, windows, filter shape, x_key) -> filter-shaped
    out_channels: Callable     # (static filter dims) -> Optional[int]


# patch matrices of forward passes, for the filter gradients of the same step
_PATCHES = PatchCache()


def _as_rows(a: np.ndarray) -> np.ndarray:
    """[N, *spatial, C] as an [N*prod(spatial), C] matrix (a view of a C-ordered array)."""
    return a.reshape(-1, a.shape[-1])


def _filter_matrix(w: np.ndarray) -> np.ndarray:
    """A [*size, C_in, C_out] filter as the [prod(size)*C_in, C_out] matrix ``im2col``
    rows multiply."""
    return w.reshape(-1, w.shape[-1])


def _conv_forward(x: np.ndarray, w: np.ndarray, windows, x_key=None) -> np.ndarray:
    """One product of the patch matrix with the filter; the matrix is left for the
    filter gradient of ``x_key`` (the op's input array) when one is given."""
    matrix = im2col(x, windows)
    if x_key is not None:
        _PATCHES.put(x_key, windows, matrix)
    return (matrix @ _filter_matrix(w)).reshape(
        (x.shape[0], *(win.out for win in windows), w.shape[-1]))


def _conv_backprop_filter(x: np.ndarray, dy: np.ndarray, windows, w_shape,
                          x_key=None) -> np.ndarray:
    """One product of the forward pass's patch matrix (transposed: BLAS reads it in
    place) with the output gradient."""
    matrix = None if x_key is None else _PATCHES.take(x_key, windows)
    if matrix is None:
        matrix = im2col(x, windows)
    return (matrix.T @ _as_rows(dy)).reshape(w_shape)


def _conv_backprop_input(dy: np.ndarray, w: np.ndarray, windows, in_shape) -> np.ndarray:
    """At stride 1 in 2-D the input gradient is a convolution too: of ``dy``, padded so
    that its windows end on every input position, with the filter turned by 180
    degrees and its channel axes swapped; when the input has fewer channels than the
    output, scattering one product's receptive-field gradients (``_scatter_fields``)
    moves less memory and multiplies wider matrices. Otherwise the full correlation
    would multiply mostly zeros: each receptive field's gradient comes from one
    product and is added back where it read."""
    if len(windows) == 2 and all(win.stride == 1 for win in windows):
        c_in, c_out = w.shape[-2:]
        if c_in < c_out:
            return _scatter_fields(dy, w, windows, in_shape)
        cropped, full_windows = _full_correlation(dy, windows, in_shape[1:3])
        return _conv_forward(cropped, w[::-1, ::-1].transpose(0, 1, 3, 2), full_windows)
    c_in = w.shape[-2]
    taps = int(np.prod(w.shape[:-2]))
    matrix = _filter_matrix(w).T
    padded = np.zeros((in_shape[0], *(n + win.before + win.after for n, win in zip(
        in_shape[1:-1], windows, strict=True)), c_in), dy.dtype)
    # a few images at a time, so that their receptive-field gradients stay in cache
    # between the product that writes them and the adds that read them
    per_image = int(np.prod(dy.shape[1:-1])) * taps * c_in * dy.itemsize
    chunk = max(1, _FIELDS_CHUNK_BYTES // max(per_image, 1))
    for first in range(0, len(dy), chunk):
        part = dy[first:first + chunk]
        fields = (_as_rows(part) @ matrix).reshape(part.shape[:-1] + (taps, c_in))
        for tap, view in window_taps(padded[first:first + chunk], windows):
            view += fields[..., tap, :]
    return unpad(padded, windows, in_shape)


# the receptive-field gradients an input-gradient product computes at a time, at most
_FIELDS_CHUNK_BYTES = 4 << 20


def _scatter_fields(dy: np.ndarray, w: np.ndarray, windows, in_shape) -> np.ndarray:
    """The stride-1 input gradient as a product and a contiguous add per filter tap,
    a few images at a time.

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
    rows = laid.reshape(n, length, c_out)
    matrix = _filter_matrix(w)
    # a tap's block ends at most (kw - 1) * dilation past the last image's grid
    grid = np.zeros((c_in, n, padded_h * padded_w + (kw - 1) * wd.dilation), dy.dtype)
    # a few images at a time, so that their receptive-field gradients stay in cache
    # between the product that writes them and the adds that read them
    chunk = max(1, _FIELDS_CHUNK_BYTES // (matrix.shape[0] * length * dy.itemsize))
    for first in range(0, n, chunk):
        last = min(n, first + chunk)
        fields = (matrix @ rows[first:last].reshape(-1, c_out).T).reshape(
            kh, kw, c_in, last - first, length)
        block = grid[:, first:last]
        for i in range(kh):
            for j in range(kw):
                start = i * h.dilation * padded_w + j * wd.dilation
                block[:, :, start:start + length] += fields[i, j]
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




def _per_multiplier(dy: np.ndarray, channels: int) -> np.ndarray:
    """Depthwise outputs [N,Ho,Wo,C*M] viewed as [N,Ho,Wo,C,M]."""
    return dy.reshape(dy.shape[:3] + (channels, -1))


def _depthwise_forward(x: np.ndarray, w: np.ndarray, windows, x_key=None) -> np.ndarray:
    h, wd = windows
    per_multiplier = np.einsum("nhwcij,ijcm->nhwcm", patches(x, windows), w)
    return per_multiplier.reshape(x.shape[0], h.out, wd.out, w.shape[2] * w.shape[3])


def _depthwise_backprop_input(dy: np.ndarray, w: np.ndarray, windows,
                              in_shape) -> np.ndarray:
    """Each tap's gradient, channel by channel: ``dy``'s multiplier slices times the
    tap's filter values, summed over the multipliers into one reused buffer, then added
    where the tap reads."""
    channels, multiplier = w.shape[2:]
    per_tap = w.reshape(-1, channels, multiplier)  # [kh*kw, C, M]
    per_multiplier = _per_multiplier(dy, channels)
    value = np.empty(dy.shape[:3] + (channels,), dy.dtype)
    term = np.empty_like(value) if multiplier > 1 else None

    def tap_value(tap: int) -> np.ndarray:
        np.multiply(per_multiplier[..., 0], per_tap[tap, :, 0], out=value)
        for m in range(1, multiplier):
            np.add(value, np.multiply(per_multiplier[..., m], per_tap[tap, :, m], out=term),
                   out=value)
        return value
    return accumulate_taps(tap_value, windows, in_shape, dy.dtype)


def _depthwise_backprop_filter(x: np.ndarray, dy: np.ndarray, windows, w_shape,
                               x_key=None) -> np.ndarray:
    return np.einsum("nhwcij,nhwcm->ijcm", patches(x, windows),
                     _per_multiplier(dy, x.shape[3]))


CONV = ConvKind(forward=_conv_forward, backprop_input=_conv_backprop_input,
                backprop_filter=_conv_backprop_filter, out_channels=lambda dims: dims[-1])


_DEPTHWISE = ConvKind(
    forward=_depthwise_forward, backprop_input=_depthwise_backprop_input,
    backprop_filter=_depthwise_backprop_filter,
    out_channels=lambda dims: None if None in dims[2:] else dims[2] * dims[3])


def _conv_output_shape(kind: ConvKind, spec: WindowSpec, x_shape: TensorShape,
                       w_shape: TensorShape, op_type: str) -> TensorShape:
    """The static output shape of convolving ``x_shape`` with ``w_shape``."""
    rank = spec.rank
    dims = (None,) * (rank + 2) if x_shape.ndims is None else spec.last(x_shape.as_tuple())
    w_dims = w_shape.as_tuple() or (None,) * (rank + 2)
    c, ci = dims[-1], w_dims[-2]
    context = f"'{op_type}' with input shapes: {x_shape}, {w_shape}"
    if c is not None and ci is not None and c != ci:
        raise errors.InvalidShapeError(
            f"Depth of input ({c}) is not a multiple of input depth of filter ({ci})",
            f" ({context})")
    out = spec.out_sizes(dims[1:-1], w_dims[:rank], context)
    return TensorShape(spec.layout((dims[0], *out, kind.out_channels(w_dims))))


def _check_conv_operands(first: Tensor, second: Tensor, op_type: str, first_arg: str,
                         second_arg: str, rank: int) -> None:
    """Both of rank ``rank`` + 2, of one floating dtype (the second checked against the
    first)."""
    check_dtype_in(first, FLOATING, op_type, first_arg)
    check_matching_dtype(second, first, op_type, second_arg, first_arg)
    check_rank(first, rank + 2, op_type, first_arg)
    check_rank(second, rank + 2, op_type, second_arg)


class ConvFamily(NamedTuple):
    """A convolution op type and its two backprop op types, of one spatial rank."""

    base: str
    input_type: str
    filter_type: str
    rank: int


def _conv_infers(kind: ConvKind, family: ConvFamily) -> tuple[Callable, Callable, Callable]:
    base, rank = family.base, family.rank

    def forward(inputs, attrs):
        x, w = inputs
        _check_conv_operands(x, w, base, "input", "filter", rank)
        spec = checked_spec(attrs, base, x, rank)
        return [(x.dtype, _conv_output_shape(kind, spec, x.shape, w.shape, base))]

    def backprop_input(inputs, attrs):
        sizes, w, dy = inputs
        op_type = family.input_type
        _check_conv_operands(w, dy, op_type, "filter", "out_backprop", rank)
        shape = shape_from_sizes(sizes, op_type, rank)
        expected = _conv_output_shape(kind, checked_spec(attrs, op_type, dy, rank), shape,
                                      w.shape, op_type)
        if not expected.is_compatible_with(dy.shape):
            raise ValueError(f"'{op_type}': out_backprop {dy.name} has shape {dy.shape}, but "
                             f"an input of shape {shape} convolved with filter {w.name} of "
                             f"shape {w.shape} has shape {expected}")
        return [(w.dtype, shape)]

    def backprop_filter(inputs, attrs):
        x, sizes, dy = inputs
        op_type = family.filter_type
        _check_conv_operands(x, dy, op_type, "input", "out_backprop", rank)
        checked_spec(attrs, op_type, x, rank)
        return [(x.dtype, shape_from_sizes(sizes, op_type, rank))]

    return forward, backprop_input, backprop_filter


def _conv_kernels(kind: ConvKind, rank: int) -> tuple[Callable, Callable, Callable]:
    def forward(x, w, **attrs):
        spec = WindowSpec(attrs, rank)
        x_last = spec.to_last(x)
        return spec.from_last(kind.forward(x_last, w, spec.windows(x_last.shape[1:-1],
                                                                   w.shape[:rank]), x))

    def backprop_input(sizes, w, dy, **attrs):
        spec = WindowSpec(attrs, rank)
        in_shape = spec.last([int(s) for s in sizes])
        dy = spec.to_last(dy)
        windows = spec.windows(in_shape[1:-1], w.shape[:rank])
        outs = tuple(win.out for win in windows)
        if dy.shape[1:-1] != outs:
            raise ValueError(f"out_backprop has spatial shape {dy.shape[1:-1]}, but the "
                             f"convolution of an input of shape {tuple(sizes)} has {outs}")
        return spec.from_last(kind.backprop_input(dy, w, windows, in_shape))

    def backprop_filter(x, sizes, dy, **attrs):
        spec = WindowSpec(attrs, rank)
        w_shape = tuple(int(s) for s in sizes)
        x_last, dy = spec.to_last(x), spec.to_last(dy)
        windows = spec.windows(x_last.shape[1:-1], w_shape[:rank])
        return kind.backprop_filter(x_last, dy, windows, w_shape, x)

    return forward, backprop_input, backprop_filter


def define_conv_family(family: ConvFamily, kind: ConvKind) -> None:
    """Defines ``family.base`` and its backprop ops (input: sizes, filter, dy; filter:
    input, sizes, dy), each differentiable.

    All three are bilinear, so each one's gradient is made of the other two.
    """
    base, input_type, filter_type = family.base, family.input_type, family.filter_type
    for op_type, infer, kernel in zip((base, input_type, filter_type),
                                      _conv_infers(kind, family),
                                      _conv_kernels(kind, family.rank), strict=True):
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


define_conv_family(ConvFamily("Conv2D", "Conv2DBackpropInput", "Conv2DBackpropFilter", 2), CONV)


define_conv_family(ConvFamily("DepthwiseConv2dNative", "DepthwiseConv2dNativeBackpropInput",
                              "DepthwiseConv2dNativeBackpropFilter", 2), _DEPTHWISE)


def conv_attrs(strides, padding, data_format: str, dilations, op_type: str) -> dict:
    """A convolution op's window attrs: strides (required), dilations (default 1),
    data_format and TF's padding attrs, with TF's messages."""
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
                    **conv_attrs(strides, padding, data_format, dilations, "Conv2D"))


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
                    **conv_attrs(strides, padding, data_format, dilations,
                                  "Conv2DBackpropInput"))


@constructor("Conv2DBackpropFilter", "input", "filter_sizes", "out_backprop")
def conv2d_backprop_filter(input, filter_sizes, out_backprop, strides,  # noqa: A002
                           padding, use_cudnn_on_gpu: bool = True, data_format: str = "NHWC",
                           dilations=None, name: Optional[str] = None) -> Tensor:
    """The gradient of ``conv2d`` with respect to its filter, of shape ``filter_sizes``."""
    x, dy = conv_operands(input, out_backprop, "Conv2DBackpropFilter")
    return apply_op("Conv2DBackpropFilter", [x, sizes_tensor(filter_sizes, x), dy],
                    name=name or "Conv2DBackpropFilter",
                    **conv_attrs(strides, padding, data_format, dilations,
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
                    **conv_attrs(strides, padding, data_format, dilations,
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
                    **conv_attrs(strides, padding, data_format, dilations,
                                  "DepthwiseConv2dNative"))


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
                        strides=[1, width_value(stride, "stride", channels_last)],
                        padding=padding, data_format="NHWC" if channels_last else "NCHW",
                        dilations=[1, width_value(1 if dilations is None else dilations,
                                                   "dilations", channels_last)])
        return array.squeeze(result, [height_axis])


@constructor("separable_conv2d", "input", "depthwise_filter", "pointwise_filter",
             single_op=False)
def separable_conv2d(input, depthwise_filter, pointwise_filter, strides,  # noqa: A002
                     padding, rate=None, name: Optional[str] = None,
                     data_format: Optional[str] = None, dilations=None) -> Tensor:
    """A depthwise convolution ([kh, kw, in, multiplier]) followed by a 1x1 pointwise
    one ([1, 1, in * multiplier, out]), as TF composes them."""
    data_format = data_format or "NHWC"
    dilations = None if rate is None and dilations is None else \
        alias("dilations", dilations, "rate", rate)
    with name_scope(name, "separable_conv2d", [input, depthwise_filter,
                                               pointwise_filter]) as scope:
        x = convert_to_tensor(input, name="input")
        check_dtype_in(x, FLOATING, "separable_conv2d", "input")
        pointwise = as_tensor(pointwise_filter, dtype=None if isinstance(
            pointwise_filter, Tensor) else x.dtype, name="pointwise_filter", like=x)
        check_rank(pointwise, 4, "separable_conv2d", "pointwise_filter")
        dims = pointwise.shape.as_tuple()
        if dims is not None and (dims[0], dims[1]) != (1, 1):
            raise ValueError(f"pointwise_filter must be of spatial size 1x1, got shape "
                             f"{pointwise.shape} ({pointwise.name})")
        depthwise = depthwise_conv2d(x, depthwise_filter, strides, padding,
                                     data_format=data_format, dilations=dilations,
                                     name="depthwise")
        return conv2d(depthwise, pointwise, [1, 1, 1, 1], padding="VALID",
                      data_format=data_format, name=scope)
