"""TF1's other convolution entry points, built on the existing convolution ops (no new
kernels): ``convolution`` (any rank), ``atrous_conv2d`` and ``atrous_conv2d_transpose``,
``conv1d_transpose`` and the ``DepthwiseConv2dNative`` constructors.

Dilated convolutions take TF1's graph route: ``SpaceToBatchND``, a plain (VALID)
convolution, ``BatchToSpaceND``, so their op types and names match TF1's graphs.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from gradflow.framework.constant import convert_to_tensor
from gradflow.framework.graph import Tensor, name_scope
from gradflow.ops import array
from gradflow.ops.array.blocks import batch_to_space_nd, space_to_batch_nd
from gradflow.ops.common import apply_op, constructor
from gradflow.ops.nn.convolution import conv2d, conv_attrs, conv_operands, sizes_tensor
from gradflow.ops.nn.convolution_3d import conv3d
from gradflow.ops.nn.windows import alias, padding_attrs

__all__ = ["convolution", "atrous_conv2d", "atrous_conv2d_transpose", "conv1d_transpose",
           "depthwise_conv2d_native", "depthwise_conv2d_native_backprop_input",
           "depthwise_conv2d_native_backprop_filter"]


# ------------------------------------------------------------ depthwise native
@constructor("DepthwiseConv2dNative", "input", "filter")
def depthwise_conv2d_native(input, filter, strides, padding,
                            data_format: str = "NHWC", dilations=None,
                            name: Optional[str] = None) -> Tensor:
    """The ``DepthwiseConv2dNative`` op itself: ``filter`` [kh, kw, in, multiplier]."""
    x, w = conv_operands(input, filter, "DepthwiseConv2dNative")
    return apply_op("DepthwiseConv2dNative", [x, w], name=name or "DepthwiseConv2dNative",
                    **conv_attrs(strides, padding, data_format, dilations,
                                       "DepthwiseConv2dNative"))


@constructor("DepthwiseConv2dNativeBackpropInput", "input_sizes", "filter", "out_backprop")
def depthwise_conv2d_native_backprop_input(input_sizes, filter, out_backprop,
                                           strides, padding, data_format: str = "NHWC",
                                           dilations=None,
                                           name: Optional[str] = None) -> Tensor:
    """The gradient of ``depthwise_conv2d_native`` with respect to its input."""
    op_type = "DepthwiseConv2dNativeBackpropInput"
    dy, w = conv_operands(out_backprop, filter, op_type, "out_backprop")
    return apply_op(op_type, [sizes_tensor(input_sizes, dy), w, dy], name=name or op_type,
                    **conv_attrs(strides, padding, data_format, dilations, op_type))


@constructor("DepthwiseConv2dNativeBackpropFilter", "input", "filter_sizes", "out_backprop")
def depthwise_conv2d_native_backprop_filter(input, filter_sizes, out_backprop,
                                            strides, padding, data_format: str = "NHWC",
                                            dilations=None,
                                            name: Optional[str] = None) -> Tensor:
    """The gradient of ``depthwise_conv2d_native`` with respect to its filter."""
    op_type = "DepthwiseConv2dNativeBackpropFilter"
    x, dy = conv_operands(input, out_backprop, op_type)
    sizes = sizes_tensor(filter_sizes, x)
    return apply_op(op_type, [x, sizes, dy], name=name or op_type,
                    **conv_attrs(strides, padding, data_format, dilations, op_type))


# ------------------------------------------------------------------ convolution
def _rate_list(value, rank: int, arg: str) -> list[int]:
    values = [int(value)] * rank if np.ndim(value) == 0 else [int(v) for v in value]
    if len(values) != rank or min(values) < 1:
        raise ValueError(f"{arg} must hold {rank} positive ints (one per spatial "
                         f"dimension), got {value!r}")
    return values


def _width_entries(value: int, channels_first: bool) -> list[int]:
    """A 1-D stride or rate as the 4 entries of its height-1 2-D convolution."""
    return [1, 1, 1, value] if channels_first else [1, 1, value, 1]


def _space_to_batch_amounts(in_sizes, filter_sizes, rates, padding: str) -> tuple:
    """TF1's paddings and crops around a dilated convolution: the SAME padding of the
    dilated filter, plus what makes each padded size a multiple of its rate."""
    paddings, crops = [], []
    for size, k, rate in zip(in_sizes, filter_sizes, rates, strict=True):
        total = (k - 1) * rate if padding == "SAME" else 0
        before, after = total // 2, total - total // 2
        extra = (-(size + before + after)) % rate
        paddings.append([before, after + extra])
        crops.append([0, extra])
    return paddings, crops


def _dilated(x: Tensor, w: Tensor, rates, padding: str, scope: str) -> Optional[Tensor]:
    """The SpaceToBatchND route of a dilated channels-last convolution, when the spatial
    sizes are known (None otherwise: the convolution's dilations give the same values)."""
    spatial = len(rates)
    dims, kernel = x.shape.as_tuple(), w.shape.as_tuple()
    if dims is None or kernel is None or None in dims[1:1 + spatial] or \
            None in kernel[:spatial]:
        return None
    paddings, crops = _space_to_batch_amounts(dims[1:1 + spatial], kernel[:spatial], rates,
                                              padding)
    block = np.asarray(rates, dtype=np.int32)
    batched = space_to_batch_nd(x, block, np.asarray(paddings, np.int32))
    result = _plain(batched, w, [1] * spatial, [1] * spatial, "VALID", False, scope)
    return batch_to_space_nd(result, block, np.asarray(crops, np.int32))


def _plain(x: Tensor, w: Tensor, steps, rates, padding: str, channels_first: bool,
           scope: str) -> Tensor:
    """A 1-, 2- or 3-D convolution op named ``scope`` (1-D as 2-D of height 1)."""
    spatial = len(steps)
    if spatial == 1:
        axis = 2 if channels_first else 1
        result = conv2d(array.expand_dims(x, axis), array.expand_dims(w, 0),
                        _width_entries(steps[0], channels_first), padding,
                        data_format="NCHW" if channels_first else "NHWC",
                        dilations=_width_entries(rates[0], channels_first), name=scope)
        return array.squeeze(result, [axis])
    def full(values):
        return [1, 1, *values] if channels_first else [1, *values, 1]
    if spatial == 3:
        return conv3d(x, w, full(steps), padding,
                      data_format="NCDHW" if channels_first else "NDHWC",
                      dilations=full(rates), name=scope)
    return conv2d(x, w, full(steps), padding, data_format="NCHW" if channels_first else "NHWC",
                  dilations=full(rates), name=scope)


@constructor("convolution", "input", "filter", single_op=False)
def convolution(input, filter=None, padding=None, strides=None,
                dilation_rate=None, name: Optional[str] = None,
                data_format: Optional[str] = None, filters=None, dilations=None) -> Tensor:
    """A 1-, 2- or 3-D convolution picked by the filter's rank; dilated channels-last
    ones run as TF1 runs them (SpaceToBatchND, VALID convolution, BatchToSpaceND)."""
    filter = alias("filter", filter, "filters", filters)
    if dilation_rate is not None or dilations is not None:
        dilation_rate = alias("dilation_rate", dilation_rate, "dilations", dilations)
    if padding not in ("SAME", "VALID"):
        raise ValueError(f"padding must be 'SAME' or 'VALID', got {padding!r}")
    with name_scope(name, "convolution", [input, filter]) as scope:
        x = convert_to_tensor(input, name="input")
        w = convert_to_tensor(filter, name="filter", dtype=x.dtype)
        rank = w.shape.ndims if w.shape.ndims is not None else x.shape.ndims
        if rank is None:
            raise ValueError("convolution: the rank of input or filter must be known")
        spatial = rank - 2
        if spatial not in (1, 2, 3):
            raise ValueError(f"convolution: filter must be of rank 3, 4 or 5, got {rank} "
                             f"({w.name})")
        rates = _rate_list(1 if dilation_rate is None else dilation_rate, spatial,
                           "dilation_rate")
        steps = _rate_list(1 if strides is None else strides, spatial, "strides")
        if max(rates) > 1 and max(steps) > 1:
            raise ValueError("strides > 1 not supported in conjunction with dilation_rate > "
                             "1")
        channels_first = data_format is not None and data_format.startswith("NC")
        if max(rates) > 1 and not channels_first:
            dilated = _dilated(x, w, rates, padding, scope)
            if dilated is not None:
                return dilated
        return _plain(x, w, steps, rates, padding, channels_first, scope)


def atrous_conv2d(value, filters, rate: int, padding: str,
                  name: Optional[str] = None) -> Tensor:
    """2-D convolution with holes: the filter taps ``rate`` apart (``convolution`` with
    ``dilation_rate=[rate, rate]``)."""
    return convolution(value, filters, padding, dilation_rate=[rate, rate], name=name)


@constructor("atrous_conv2d_transpose", "value", "filters", "output_shape", single_op=False)
def atrous_conv2d_transpose(value, filters, output_shape, rate: int, padding: str,
                            name: Optional[str] = None) -> Tensor:
    """The transpose (gradient) of ``atrous_conv2d``: ``filters`` [kh, kw, out, in]."""
    if padding not in ("SAME", "VALID"):
        raise ValueError(f"padding must be either VALID or SAME: {padding}")
    if int(rate) < 1:
        raise ValueError(f"rate {rate} cannot be less than one")
    rate = int(rate)
    with name_scope(name, "atrous_conv2d_transpose", [value, filters, output_shape]) as scope:
        dy, w = conv_operands(value, filters, "Conv2DBackpropInput", "value")
        in_channels, kernel = dy.shape.as_tuple(), w.shape.as_tuple()
        if in_channels is not None and kernel is not None and None not in (
                in_channels[3], kernel[3]) and in_channels[3] != kernel[3]:
            raise ValueError(f"`value` channel count must be compatible with `filters` input "
                             f"channel count. Received: value.shape={tuple(in_channels)} with "
                             f"channel count {in_channels[3]} and filters.shape="
                             f"{tuple(kernel)} with input channel count {kernel[3]}.")
        if isinstance(output_shape, Tensor) or kernel is None or None in kernel[:2]:
            raise ValueError("atrous_conv2d_transpose: output_shape must be a list of 4 ints "
                             "and the filter's spatial size known")
        shape = [int(s) for s in output_shape]
        if rate == 1:
            return apply_op("Conv2DBackpropInput", [sizes_tensor(shape, dy), w, dy],
                            name=scope, strides=[1, 1, 1, 1], dilations=[1, 1, 1, 1],
                            data_format="NHWC", padding=padding)
        convert_to_tensor(np.asarray(shape, np.int32), name="output_shape")
        pads = []
        for size, k in zip(shape[1:3], kernel[:2], strict=True):
            total = (k - 1) * rate if padding == "SAME" else 0
            before, after = total // 2, total - total // 2
            extra = (-(size + before + after)) % rate
            pads.append((before, after, extra, (size + before + after + extra) // rate))
        block = np.asarray([rate, rate], np.int64)
        batched = space_to_batch_nd(dy, block, np.asarray([[0, p[2]] for p in pads], np.int32))
        sizes = [rate * rate * shape[0], pads[0][3], pads[1][3], shape[3]]
        result = apply_op("Conv2DBackpropInput",
                          [sizes_tensor(sizes, dy), w, batched], name="Conv2DBackpropInput",
                          strides=[1, 1, 1, 1], dilations=[1, 1, 1, 1], data_format="NHWC",
                          padding="VALID")
        crops = np.asarray([[p[0], p[1] + p[2]] for p in pads], np.int32)
        return batch_to_space_nd(result, block, crops)


@constructor("conv1d_transpose", "input", "filters", "output_shape", single_op=False)
def conv1d_transpose(input, filters, output_shape, strides, padding: str = "SAME",
                     data_format: str = "NWC", dilations=None,
                     name: Optional[str] = None) -> Tensor:
    """The transpose of ``conv1d``: ``filters`` [kw, out, in], computed as a 2-D
    transposed convolution of height 1."""
    if data_format not in ("NWC", "NCW"):
        raise ValueError(f"data_format must be \"NWC\" or \"NCW\", got {data_format!r}.")
    channels_last = data_format == "NWC"
    axis = 1 if channels_last else 2
    stride = _rate_list(strides, 1, "strides")[0] if np.ndim(strides) == 0 or \
        len(strides) == 1 else int(strides[axis])
    rate = 1 if dilations is None else (_rate_list(dilations, 1, "dilations")[0]
                                        if np.ndim(dilations) == 0 or len(dilations) == 1
                                        else int(dilations[axis]))
    with name_scope(name, "conv1d_transpose", [input, filters, output_shape]) as scope:
        dy, w = conv_operands(input, filters, "Conv2DBackpropInput", "input")
        dy = array.expand_dims(dy, axis)
        w = array.expand_dims(w, 0)
        if isinstance(output_shape, Tensor):
            sizes = array.concat([output_shape[:axis], [1], output_shape[axis:]], 0)
        else:
            shape = [int(s) for s in output_shape]
            sizes = array.concat([shape[:axis], [1], shape[axis:]], 0)
        four = [1, 1, stride, 1] if channels_last else [1, 1, 1, stride]
        dilated = [1, 1, rate, 1] if channels_last else [1, 1, 1, rate]
        result = apply_op("Conv2DBackpropInput", [sizes, w, dy], name=scope, strides=four,
                          dilations=dilated, data_format="NHWC" if channels_last else "NCHW",
                          **padding_attrs(padding, "NHWC", "Conv2DBackpropInput"))
        return array.squeeze(result, [axis])
