"""Pooling: max and average pooling in 1, 2 and 3 dimensions and their gradients.

2-D and 3-D pooling are primitives under TF's type names (``MaxPool``/``MaxPoolGrad``/
``MaxPoolGradGrad``, ``AvgPool``/``AvgPoolGrad`` and their ``3D`` twins); 1-D pooling
is composed from the 2-D ops, as TF composes it. One set of kernels serves both ranks:
they fold the window taps over strided views of the input (when the windows tile the
input, over views of its reshape, with no padded copy); a max-pool gradient finds each
window's winner by comparing the taps with the window's maximum, first tap first, and
routes the output gradient there. Loops run over taps, never over positions.
"""
from __future__ import annotations

from typing import Callable, Optional, Sequence

import numpy as np

from gradflow.framework import dtypes
from gradflow.framework.constant import convert_to_tensor
from gradflow.framework.graph import Tensor, name_scope
from gradflow.framework.registry import RegisterGradient, define_op
from gradflow.framework.tensor_shape import TensorShape
from gradflow.ops import array
from gradflow.ops.common import FLOATING, REAL_NUMERIC, apply_op, check_dtype_in, constructor
from gradflow.ops.nn.convolution_3d import window_attrs_3d
from gradflow.ops.nn.helpers import check_rank, public_attrs, where_else_zero
from gradflow.ops.nn.windows import (Window, WindowSpec, alias, checked_spec, pad_windows,
                                     padding_attrs, shape_from_sizes, static_last_dims,
                                     tile_taps, tiles, tiling, unpad, width_value, window_counts,
                                     window_list, window_taps)

__all__ = ["max_pool", "max_pool2d", "avg_pool", "avg_pool2d", "max_pool3d", "avg_pool3d",
           "max_pool1d", "avg_pool1d", "pool"]


# --------------------------------------------------------------------------- kernels
def _lowest(dtype: np.dtype):
    """The pad value that never wins a max."""
    return -np.inf if np.issubdtype(dtype, np.floating) else np.iinfo(dtype).min


def _taps(x: np.ndarray, windows: Sequence[Window], pad_value=0) -> list:
    """The [N, *out, C] view of channels-last ``x`` each tap reads: views of ``x``'s
    reshape when the windows tile it, else of a padded copy."""
    tiled = tiles(x, windows)
    if tiled is not None:
        return [view for _, view in tile_taps(tiled, windows)]
    return [view for _, view in window_taps(pad_windows(x, windows, pad_value), windows)]


def _padded_taps(padded: np.ndarray, windows: Sequence[Window]) -> list:
    """The tap views of an array already laid out with the windows' padding."""
    tiled = tiles(padded, windows)
    if tiled is not None:
        return [view for _, view in tile_taps(tiled, windows)]
    return [view for _, view in window_taps(padded, windows)]


def _padded_zeros(shape: Sequence[int], windows: Sequence[Window], dtype) -> np.ndarray:
    """Zeros of channels-last ``shape`` with the windows' padding around its spatial axes."""
    return np.zeros((shape[0], *(n + win.before + win.after for n, win in zip(
        shape[1:-1], windows, strict=True)), shape[-1]), dtype)


def _window_max(taps: list) -> np.ndarray:
    """Each window's maximum, folded tap by tap (a NaN wins, as in a max reduction)."""
    result = taps[0].copy()
    for view in taps[1:]:
        np.maximum(result, view, out=result)
    return result


def _window_sum(taps: list) -> np.ndarray:
    result = taps[0].copy()
    for view in taps[1:]:
        np.add(result, view, out=result)
    return result


def _winners(taps: list, best: np.ndarray) -> list:
    """One mask per tap, true where that tap is its window's winner: the first tap
    equal to the maximum, or in a window holding a NaN, the first NaN (as ``argmax``
    picks them)."""
    masks = []
    taken = None
    for view in taps:
        hit = np.equal(view, best)
        if taken is None:
            taken = hit.copy()
        else:
            np.greater(hit, taken, out=hit)  # hit and not taken
            np.logical_or(taken, hit, out=taken)
        masks.append(hit)
    if best.dtype.kind == "f" and not taken.all():  # windows whose maximum is a NaN
        for view, hit in zip(taps, masks, strict=True):
            np.logical_or(hit, np.isnan(view) & ~taken, out=hit)
            np.logical_or(taken, hit, out=taken)
    return masks


# the input bytes of the images a max-pool gradient works on at a time, at most
_CHUNK_BYTES = 1 << 20


def _image_chunks(x: np.ndarray) -> list:
    """Slices of ``x``'s batch axis holding about ``_CHUNK_BYTES`` each."""
    per_image = max(1, x[:1].nbytes)
    size = max(1, _CHUNK_BYTES // per_image)
    return [slice(first, first + size) for first in range(0, max(len(x), 1), size)]


def _spread_target(in_shape: Sequence[int], windows: Sequence[Window], dtype) -> np.ndarray:
    """The array ``_spread`` writes into: with the windows' padding, zeros unless the
    windows tile the whole input (then every position is written once)."""
    if tiling(windows) and all(win.out * win.size == n for win, n in zip(
            windows, in_shape[1:-1], strict=True)):
        return np.empty(in_shape, dtype)
    return _padded_zeros(in_shape, windows, dtype)


def _spread(tap_values: Callable, target: np.ndarray, windows: Sequence[Window]) -> None:
    """Writes each tap's ``tap_values(tap)`` ([N, *out, C]) into ``target`` (from
    ``_spread_target``) where that tap reads, summed where windows overlap; tiling
    windows write each position once (no adds)."""
    tiled = tiling(windows)
    for tap, view in enumerate(_padded_taps(target, windows)):
        if tiled:
            np.copyto(view, tap_values(tap))
        else:
            view += tap_values(tap)


def _pool_kernels(rank: int) -> dict:
    """The pooling kernels of ``rank`` spatial axes, by op role."""
    def setup(x, attrs, sizes=None):
        spec = WindowSpec(attrs, rank)
        x = spec.to_last(x)
        shape = x.shape if sizes is None else spec.last([int(s) for s in sizes])
        return spec, x, shape, spec.windows(shape[1:-1], spec.ksize)

    def max_pool(x, **attrs):
        spec, x, _, windows = setup(x, attrs)
        return spec.from_last(_window_max(_taps(x, windows, _lowest(x.dtype))))

    def max_pool_grad(x, y, dy, **attrs):
        """Each window's gradient goes to its maximum (the first one on ties). As in TF's
        CPU kernel, the maxima are found in ``x``; ``y`` is not read. A few images at a
        time, so that the passes over their taps read cached memory."""
        spec, x, _, windows = setup(x, attrs)
        dy = spec.to_last(dy)
        result = _spread_target(x.shape, windows, dy.dtype)
        for chunk in _image_chunks(x):
            taps = _taps(x[chunk], windows, _lowest(x.dtype))
            masks = _winners(taps, _window_max(taps))
            _spread(lambda tap, masks=masks, part=dy[chunk]: where_else_zero(masks[tap], part),
                    result[chunk], windows)
        return spec.from_last(unpad(result, windows, x.shape))

    def max_pool_grad_grad(x, y, ddx, **attrs):
        """Reads ``ddx`` (input-shaped) at each window's maximum."""
        spec, x, _, windows = setup(x, attrs)
        taps = _taps(x, windows, _lowest(x.dtype))
        masks = _winners(taps, _window_max(taps))
        result = None
        for hit, view in zip(masks, _taps(spec.to_last(ddx), windows), strict=True):
            # the masks do not overlap: adding the masked taps picks the winners
            picked = where_else_zero(hit, view)
            result = picked if result is None else np.add(result, picked, out=result)
        return spec.from_last(result)

    def avg_pool(x, **attrs):
        """Mean over each window's real inputs: SAME padding is not counted."""
        spec, x, _, windows = setup(x, attrs)
        total = _window_sum(_taps(x, windows))
        total /= window_counts(windows, x.shape[1:-1], total.dtype)
        return spec.from_last(total)

    def avg_pool_grad(sizes, dy, **attrs):
        spec, dy, in_shape, windows = setup(dy, attrs, sizes)
        share = dy / window_counts(windows, in_shape[1:-1], dy.dtype)
        result = _spread_target(in_shape, windows, dy.dtype)
        _spread(lambda tap: share, result, windows)
        return spec.from_last(unpad(result, windows, in_shape))

    return {"max": max_pool, "max_grad": max_pool_grad, "max_grad_grad": max_pool_grad_grad,
            "avg": avg_pool, "avg_grad": avg_pool_grad}


def _infer_pool(op_type: str, allowed: Sequence[dtypes.DType], rank: int) -> Callable:
    def infer(inputs, attrs):
        x = inputs[0]
        check_dtype_in(x, allowed, op_type, "input")
        check_rank(x, rank + 2, op_type, "input")
        spec = checked_spec(attrs, op_type, x, rank)
        dims = static_last_dims(spec, x)
        out = spec.out_sizes(dims[1:-1], spec.ksize, f"'{op_type}' of {x.name} with shape "
                                                     f"{x.shape} and ksize {attrs['ksize']}")
        return [(x.dtype, TensorShape(spec.layout((dims[0], *out, dims[-1]))))]
    return infer


def _define_pool_family(suffix: str, rank: int, max_types: Sequence[dtypes.DType]) -> None:
    """``MaxPool<suffix>`` with its gradient ops and ``AvgPool<suffix>`` with its
    gradient op, for ``rank`` spatial axes."""
    kernels = _pool_kernels(rank)
    max_type, avg_type = "MaxPool" + suffix, "AvgPool" + suffix
    grad_type, grad_grad_type = max_type + "Grad", max_type + "GradGrad"
    avg_grad_type = avg_type + "Grad"

    def infer_avg_grad(inputs, attrs):
        sizes, dy = inputs
        check_dtype_in(dy, FLOATING, avg_grad_type, "grad")
        return [(dy.dtype, shape_from_sizes(sizes, avg_grad_type, rank))]

    define_op(max_type, infer=_infer_pool(max_type, max_types, rank), kernel=kernels["max"])
    define_op(grad_type, infer=lambda inputs, attrs: [(inputs[2].dtype, inputs[0].shape)],
              kernel=kernels["max_grad"])
    define_op(grad_grad_type, infer=lambda inputs, attrs: [(inputs[2].dtype, inputs[1].shape)],
              kernel=kernels["max_grad_grad"])
    define_op(avg_type, infer=_infer_pool(avg_type, FLOATING, rank), kernel=kernels["avg"])
    define_op(avg_grad_type, infer=infer_avg_grad, kernel=kernels["avg_grad"])

    @RegisterGradient(max_type)
    def _max_pool_grad(op, grad):
        return apply_op(grad_type, [op.inputs[0], op.outputs[0], grad], name=grad_type,
                        **public_attrs(op))

    def backward_grad(op, grad, op_type: str):
        """The max-pool gradient ops are linear in their last input and piecewise
        constant in the others; each one's gradient is the other one."""
        x, y, _ = op.inputs
        return (array.zeros_like(x), array.zeros_like(y),
                apply_op(op_type, [x, y, grad], name=op_type, **public_attrs(op)))

    RegisterGradient(grad_type)(lambda op, grad: backward_grad(op, grad, grad_grad_type))
    RegisterGradient(grad_grad_type)(lambda op, grad: backward_grad(op, grad, grad_type))

    @RegisterGradient(avg_type)
    def _avg_pool_grad(op, grad):
        return apply_op(avg_grad_type, [array.shape_of_input(op.inputs[0]), grad],
                        name=avg_grad_type, **public_attrs(op))

    @RegisterGradient(avg_grad_type)
    def _avg_pool_grad_grad(op, grad):
        return None, apply_op(avg_type, [grad], name=avg_type, **public_attrs(op))


_define_pool_family("", 2, REAL_NUMERIC)


_define_pool_family("3D", 3, FLOATING)


# ---------------------------------------------------------------------- constructors
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


def _pool3d(op_type: str, x, ksize, strides, padding, data_format: str,
            name: Optional[str]) -> Tensor:
    x_t = convert_to_tensor(x, name="input")
    return apply_op(op_type, [x_t], name=name or op_type,
                    ksize=window_list(ksize, "ksize", data_format),
                    **window_attrs_3d(strides, padding, data_format, op_type))


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


def _pool1d(pool2d: Callable, default_name: str, x, ksize, strides, padding,
            data_format: str, name: Optional[str]) -> Tensor:
    """A 1-D pooling as TF builds it: expand to height 1, pool in 2-D, squeeze."""
    if data_format not in ("NWC", "NCW"):
        raise ValueError(f'data_format must be "NWC" or "NCW", got {data_format!r}.')
    channels_last = data_format == "NWC"
    height_axis = 1 if channels_last else 2
    with name_scope(name, default_name, [x]) as scope:
        x_t = convert_to_tensor(x, name="input")
        check_rank(x_t, 3, default_name, "input")
        pooled = pool2d(array.expand_dims(x_t, height_axis),
                        ksize=[1, width_value(ksize, "ksize", channels_last)],
                        strides=[1, width_value(strides, "strides", channels_last)],
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


def pool(input, window_shape, pooling_type: str, padding: str,  # noqa: A002 - TF's names
         dilation_rate=None, strides=None, name: Optional[str] = None,
         data_format: Optional[str] = None, dilations=None) -> Tensor:
    """N-D pooling (N = 1, 2 or 3) with ``pooling_type`` 'MAX' or 'AVG'; dilated windows
    are not supported (a ValueError)."""
    rate = alias("dilation_rate", dilation_rate, "dilations", dilations) \
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
