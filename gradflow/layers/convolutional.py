"""``tf.layers`` convolutions: Conv1D/2D/3D, Conv2DTranspose/Conv3DTranspose,
SeparableConv1D/2D (class and function forms)."""
from __future__ import annotations

from typing import Callable, Optional

from gradflow.framework import dtypes
from gradflow.framework.constant import constant
from gradflow.framework.graph import Tensor, name_scope
from gradflow.framework.tensor_shape import TensorShape
from gradflow.layers.base import InputSpec, Layer
from gradflow.layers.core import apply_activation, normalize_data_format
from gradflow.ops import array, nn_more
from gradflow.ops import nn as nn_ops
from gradflow.variables import zeros_initializer

__all__ = ["Conv1D", "conv1d", "Conv2D", "conv2d", "Conv3D", "conv3d", "Conv2DTranspose",
           "conv2d_transpose", "Conv3DTranspose", "conv3d_transpose", "SeparableConv1D",
           "separable_conv1d", "SeparableConv2D", "separable_conv2d",
           "Convolution1D", "Convolution2D", "Convolution3D", "Convolution2DTranspose",
           "Convolution3DTranspose"]

_FORMATS = {("channels_last", 1): "NWC", ("channels_first", 1): "NCW",
            ("channels_last", 2): "NHWC", ("channels_first", 2): "NCHW",
            ("channels_last", 3): "NDHWC", ("channels_first", 3): "NCDHW"}


def normalize_tuple(value, n: int, name: str) -> tuple[int, ...]:
    """An int or ``n`` ints as an ``n``-tuple of ints (TF's message otherwise)."""
    if isinstance(value, int):
        return (value,) * n
    try:
        values = tuple(int(v) for v in value)
    except (TypeError, ValueError):
        values = ()
    if len(values) != n:
        raise ValueError(f"The `{name}` argument must be a tuple of {n} integers. "
                         f"Received: {value}")
    return values


def positive_tuple(value, n: int, name: str) -> tuple[int, ...]:
    """``normalize_tuple`` whose entries must be positive (TF's message otherwise)."""
    values = normalize_tuple(value, n, name)
    bad = {v for v in values if v <= 0}
    if bad:
        raise ValueError(f"The `{name}` argument must be a tuple of {n} integers. Received: "
                         f"{value} including {bad} that does not satisfy the requirement "
                         "`> 0`.")
    return values


def normalize_padding(value: str, allow_causal: bool = False) -> str:
    """'valid', 'same' (or 'causal' where allowed), with TF's messages otherwise."""
    padding = str(value).lower()
    if padding not in ("valid", "same", "causal"):
        raise ValueError("The `padding` argument must be a list/tuple or one of \"valid\", "
                         "\"same\" (or \"causal\", only for `Conv1D). Received: "
                         f"{value}")
    if padding == "causal" and not allow_causal:
        raise ValueError("Causal padding is only supported for `Conv1D`and `SeparableConv1D`.")
    return padding


class _Conv(Layer):
    """The N-D convolution layers: kernel ``kernel_size + (in, filters)``, bias, activation."""

    def __init__(self, rank: int, filters: int, kernel_size, strides=1, padding="valid",
                 data_format="channels_last", dilation_rate=1,
                 activation: Optional[Callable] = None, use_bias: bool = True,
                 kernel_initializer=None, bias_initializer=zeros_initializer(),
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, trainable: bool = True,
                 name: Optional[str] = None, **kwargs):
        super().__init__(trainable=trainable, name=name,
                         activity_regularizer=activity_regularizer, **kwargs)
        self.rank = rank
        if filters is not None and int(filters) <= 0:
            raise ValueError("Invalid value for argument `filters`. Expected a strictly "
                             f"positive value. Received filters={filters}.")
        self.filters = None if filters is None else int(filters)
        self.kernel_size = positive_tuple(kernel_size, rank, "kernel_size")
        self.strides = normalize_tuple(strides, rank, "strides")
        self.padding = normalize_padding(padding, allow_causal=rank == 1)
        self.data_format = normalize_data_format(data_format)
        self.dilation_rate = normalize_tuple(dilation_rate, rank, "dilation_rate")
        if not all(self.strides):
            raise ValueError("The argument `strides` cannot contains 0(s). Received: "
                             f"{self.strides}")
        self.activation = activation
        self.use_bias = bool(use_bias)
        self.kernel_initializer = kernel_initializer
        self.bias_initializer = bias_initializer
        self.kernel_regularizer = kernel_regularizer
        self.bias_regularizer = bias_regularizer
        self.kernel_constraint = kernel_constraint
        self.bias_constraint = bias_constraint
        self.input_spec = InputSpec(min_ndim=rank + 2)
        self.kernel = None
        self.bias = None

    @property
    def _channel_axis(self) -> int:
        return -1 if self.data_format == "channels_last" else 1

    def _input_channels(self, input_shape) -> int:
        input_shape = TensorShape(input_shape)
        dims = input_shape.as_list() if input_shape.ndims is not None else None
        channels = None if dims is None else dims[self._channel_axis]
        if channels is None:
            raise ValueError("The channel dimension of the inputs should be defined. The "
                             f"input_shape received is {input_shape}, where axis "
                             f"{self._channel_axis} (0-based) is the channel dimension, which "
                             "found to be `None`.")
        self.input_spec = InputSpec(min_ndim=self.rank + 2,
                                    axes={self._channel_axis: channels})
        return channels

    def _kernel_shape(self, channels: int) -> tuple:
        return self.kernel_size + (channels, self.filters)

    def _add_bias(self) -> None:
        if self.use_bias:
            self.bias = self.add_weight("bias", shape=(self.filters,),
                                        initializer=self.bias_initializer,
                                        regularizer=self.bias_regularizer,
                                        constraint=self.bias_constraint, dtype=self.dtype)

    def build(self, input_shape) -> None:
        channels = self._input_channels(input_shape)
        self.kernel = self.add_weight("kernel", shape=self._kernel_shape(channels),
                                      initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint, dtype=self.dtype)
        self._add_bias()

    def _tf_format(self, rank: Optional[int] = None) -> str:
        return _FORMATS[self.data_format, rank or self.rank]

    def _causal_pad(self, inputs: Tensor, axis: int) -> Tensor:
        left = self.dilation_rate[0] * (self.kernel_size[0] - 1)
        pads = [[0, 0]] * inputs.shape.ndims
        pads[axis] = [left, 0]
        return array.pad(inputs, pads)

    def _convolve(self, inputs: Tensor) -> Tensor:
        padding = "VALID" if self.padding == "causal" else self.padding.upper()
        if self.rank == 1:
            return self._convolve_1d(inputs, padding)
        if self.rank == 2:
            return nn_ops.conv2d(inputs, self.kernel, strides=list(self.strides), padding=padding,
                          data_format=self._tf_format(), dilations=list(self.dilation_rate),
                          name="Conv2D")
        return nn_more.conv3d(inputs, self.kernel, strides=list(self.strides), padding=padding,
                      data_format=self._tf_format(), dilations=list(self.dilation_rate),
                      name="Conv3D")

    def _convolve_1d(self, inputs: Tensor, padding: str) -> Tensor:
        """A 1-D convolution as TF builds it: height 1, a 2-D convolution, squeeze."""
        height_axis = 1 if self.data_format == "channels_last" else 2
        if self.padding == "causal":
            inputs = self._causal_pad(inputs, height_axis)
        with name_scope("Conv1D") as scope:
            x = array.expand_dims(inputs, height_axis, name="ExpandDims")
            w = array.expand_dims(self.kernel, 0, name="ExpandDims_1")
            y = nn_ops.conv2d(x, w, strides=[1, self.strides[0]], padding=padding,
                       data_format=self._tf_format(2), dilations=[1, self.dilation_rate[0]],
                       name=scope)
            return array.squeeze(y, [height_axis], name="Squeeze")

    def _bias(self, outputs: Tensor, rank: Optional[int] = None) -> Tensor:
        if not self.use_bias:
            return outputs
        data_format = "NHWC" if self.data_format == "channels_last" else \
            {1: "NCHW", 2: "NCHW", 3: "NCDHW"}[rank or self.rank]
        return nn_ops.bias_add(outputs, self.bias, data_format=data_format, name="BiasAdd")

    def call(self, inputs):
        return apply_activation(self.activation, self._bias(self._convolve(inputs)))


def _conv_class(rank: int, doc: str):
    class ConvN(_Conv):
        def __init__(self, filters: int, kernel_size, strides=1, padding="valid",
                     data_format="channels_last", dilation_rate=1,
                     activation: Optional[Callable] = None, use_bias: bool = True,
                     kernel_initializer=None, bias_initializer=zeros_initializer(),
                     kernel_regularizer=None, bias_regularizer=None,
                     activity_regularizer=None, kernel_constraint=None, bias_constraint=None,
                     trainable: bool = True, name: Optional[str] = None, **kwargs):
            super().__init__(rank, filters, kernel_size, strides=strides, padding=padding,
                             data_format=data_format, dilation_rate=dilation_rate,
                             activation=activation, use_bias=use_bias,
                             kernel_initializer=kernel_initializer,
                             bias_initializer=bias_initializer,
                             kernel_regularizer=kernel_regularizer,
                             bias_regularizer=bias_regularizer,
                             activity_regularizer=activity_regularizer,
                             kernel_constraint=kernel_constraint,
                             bias_constraint=bias_constraint, trainable=trainable, name=name,
                             **kwargs)
    ConvN.__name__ = ConvN.__qualname__ = f"Conv{rank}D"
    ConvN.__doc__ = doc
    return ConvN


Conv1D = _conv_class(1, "1-D convolution layer over [batch, width, channels] inputs "
                        "(padding 'valid', 'same' or 'causal').")
Conv2D = _conv_class(2, "2-D convolution layer over [batch, height, width, channels] inputs.")
Conv3D = _conv_class(3, "3-D convolution layer over [batch, depth, height, width, channels] "
                        "inputs.")


def _conv_function(cls, rank: int):
    def function(inputs, filters: int, kernel_size, strides=1, padding="valid",
                 data_format="channels_last", dilation_rate=1,
                 activation: Optional[Callable] = None, use_bias: bool = True,
                 kernel_initializer=None, bias_initializer=zeros_initializer(),
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, trainable: bool = True,
                 name: Optional[str] = None, reuse=None) -> Tensor:
        layer = cls(filters, kernel_size, strides=strides, padding=padding,
                    data_format=data_format, dilation_rate=dilation_rate,
                    activation=activation, use_bias=use_bias,
                    kernel_initializer=kernel_initializer, bias_initializer=bias_initializer,
                    kernel_regularizer=kernel_regularizer, bias_regularizer=bias_regularizer,
                    activity_regularizer=activity_regularizer,
                    kernel_constraint=kernel_constraint, bias_constraint=bias_constraint,
                    trainable=trainable, name=name, _scope=name, _reuse=reuse)
        return layer.apply(inputs)
    function.__name__ = function.__qualname__ = f"conv{rank}d"
    function.__doc__ = f"Functional form of ``Conv{rank}D``."
    return function


conv1d = _conv_function(Conv1D, 1)
conv2d = _conv_function(Conv2D, 2)
conv3d = _conv_function(Conv3D, 3)


# ----------------------------------------------------------------------- transposed
def deconv_length(length, size: int, padding: str, stride: int):
    """The output length of a transposed convolution (an int, or a tensor if ``length``
    is one)."""
    if padding == "valid":
        return length * stride + max(size - stride, 0)
    return length * stride


class _ConvTranspose(_Conv):
    """Transposed convolutions: kernel ``kernel_size + (filters, in)``."""

    def _kernel_shape(self, channels: int) -> tuple:
        return self.kernel_size + (self.filters, channels)

    def _output_shape(self, inputs: Tensor) -> tuple[Tensor, list]:
        dims = inputs.shape.as_list()
        dynamic = array.shape(inputs)
        spatial = range(1, self.rank + 1) if self.data_format == "channels_last" else \
            range(2, self.rank + 2)
        lengths, static = [], []
        for axis, size, stride in zip(spatial, self.kernel_size, self.strides, strict=True):
            known = dims[axis]
            length = dynamic[axis] if known is None else known
            lengths.append(deconv_length(length, size, self.padding, stride))
            static.append(None if known is None else deconv_length(known, size,
                                                                    self.padding, stride))
        filters = constant(self.filters, dtype=dtypes.int32)
        entries = [dynamic[0], *lengths, filters] if self.data_format == "channels_last" \
            else [dynamic[0], filters, *lengths]
        entries = [e if isinstance(e, Tensor) else constant(e, dtype=dtypes.int32)
                   for e in entries]
        layout = [dims[0], *static, self.filters] if self.data_format == "channels_last" \
            else [dims[0], self.filters, *static]
        return array.stack(entries), layout

    def _convolve(self, inputs: Tensor) -> Tensor:
        output_shape, layout = self._output_shape(inputs)
        transpose = nn_ops.conv2d_transpose if self.rank == 2 else nn_more.conv3d_transpose
        name = "conv2d_transpose" if self.rank == 2 else "conv3d_transpose"
        strides = list(self.strides)
        outputs = transpose(inputs, self.kernel, output_shape, strides=strides,
                            padding=self.padding.upper(), data_format=self._tf_format(),
                            name=name)
        outputs.set_shape(layout)
        return outputs


def _transpose_class(rank: int, doc: str):
    class ConvNDTranspose(_ConvTranspose):
        def __init__(self, filters: int, kernel_size, strides=(1,) * rank, padding="valid",
                     data_format="channels_last", activation: Optional[Callable] = None,
                     use_bias: bool = True, kernel_initializer=None,
                     bias_initializer=zeros_initializer(), kernel_regularizer=None,
                     bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
                     bias_constraint=None, trainable: bool = True, name: Optional[str] = None,
                     **kwargs):
            super().__init__(rank, filters, kernel_size, strides=strides, padding=padding,
                             data_format=data_format, activation=activation,
                             use_bias=use_bias, kernel_initializer=kernel_initializer,
                             bias_initializer=bias_initializer,
                             kernel_regularizer=kernel_regularizer,
                             bias_regularizer=bias_regularizer,
                             activity_regularizer=activity_regularizer,
                             kernel_constraint=kernel_constraint,
                             bias_constraint=bias_constraint, trainable=trainable, name=name,
                             **kwargs)
            self.input_spec = InputSpec(ndim=rank + 2)
    ConvNDTranspose.__name__ = ConvNDTranspose.__qualname__ = f"Conv{rank}DTranspose"
    ConvNDTranspose.__doc__ = doc
    return ConvNDTranspose


Conv2DTranspose = _transpose_class(2, "Transposed 2-D convolution (\"deconvolution\") layer.")
Conv3DTranspose = _transpose_class(3, "Transposed 3-D convolution (\"deconvolution\") layer.")


def _transpose_function(cls, rank: int):
    def function(inputs, filters: int, kernel_size, strides=(1,) * rank, padding="valid",
                 data_format="channels_last", activation: Optional[Callable] = None,
                 use_bias: bool = True, kernel_initializer=None,
                 bias_initializer=zeros_initializer(), kernel_regularizer=None,
                 bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
                 bias_constraint=None, trainable: bool = True, name: Optional[str] = None,
                 reuse=None) -> Tensor:
        layer = cls(filters, kernel_size, strides=strides, padding=padding,
                    data_format=data_format, activation=activation, use_bias=use_bias,
                    kernel_initializer=kernel_initializer, bias_initializer=bias_initializer,
                    kernel_regularizer=kernel_regularizer, bias_regularizer=bias_regularizer,
                    activity_regularizer=activity_regularizer,
                    kernel_constraint=kernel_constraint, bias_constraint=bias_constraint,
                    trainable=trainable, name=name, _scope=name, _reuse=reuse)
        return layer.apply(inputs)
    function.__name__ = function.__qualname__ = f"conv{rank}d_transpose"
    function.__doc__ = f"Functional form of ``Conv{rank}DTranspose``."
    return function


conv2d_transpose = _transpose_function(Conv2DTranspose, 2)
conv3d_transpose = _transpose_function(Conv3DTranspose, 3)


# ------------------------------------------------------------------------ separable
class _SeparableConv(_Conv):
    """Depthwise kernel ``kernel_size + (in, depth_multiplier)`` then a 1x1 pointwise
    kernel ``(1, ...) + (in * depth_multiplier, filters)``, bias, activation."""

    def __init__(self, rank: int, filters: int, kernel_size, strides=1, padding="valid",
                 data_format="channels_last", dilation_rate=1, depth_multiplier: int = 1,
                 activation: Optional[Callable] = None, use_bias: bool = True,
                 depthwise_initializer=None, pointwise_initializer=None,
                 bias_initializer=zeros_initializer(), depthwise_regularizer=None,
                 pointwise_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 depthwise_constraint=None, pointwise_constraint=None, bias_constraint=None,
                 trainable: bool = True, name: Optional[str] = None, **kwargs):
        super().__init__(rank, filters, kernel_size, strides=strides, padding=padding,
                         data_format=data_format, dilation_rate=dilation_rate,
                         activation=activation, use_bias=use_bias,
                         bias_initializer=bias_initializer, bias_regularizer=bias_regularizer,
                         activity_regularizer=activity_regularizer,
                         bias_constraint=bias_constraint, trainable=trainable, name=name,
                         **kwargs)
        if int(depth_multiplier) <= 0:
            raise ValueError(f"depth_multiplier must be a positive integer, got "
                             f"{depth_multiplier}")
        self.depth_multiplier = int(depth_multiplier)
        self.depthwise_initializer = depthwise_initializer
        self.pointwise_initializer = pointwise_initializer
        self.depthwise_regularizer = depthwise_regularizer
        self.pointwise_regularizer = pointwise_regularizer
        self.depthwise_constraint = depthwise_constraint
        self.pointwise_constraint = pointwise_constraint
        self.depthwise_kernel = None
        self.pointwise_kernel = None

    def build(self, input_shape) -> None:
        channels = self._input_channels(input_shape)
        self.depthwise_kernel = self.add_weight(
            "depthwise_kernel", shape=self.kernel_size + (channels, self.depth_multiplier),
            initializer=self.depthwise_initializer, regularizer=self.depthwise_regularizer,
            constraint=self.depthwise_constraint, dtype=self.dtype)
        self.pointwise_kernel = self.add_weight(
            "pointwise_kernel",
            shape=(1,) * self.rank + (channels * self.depth_multiplier, self.filters),
            initializer=self.pointwise_initializer, regularizer=self.pointwise_regularizer,
            constraint=self.pointwise_constraint, dtype=self.dtype)
        self._add_bias()

    def call(self, inputs):
        if self.rank == 2:
            outputs = self._bias(self._separable(inputs, self.depthwise_kernel,
                                                 self.pointwise_kernel, self.strides,
                                                 self.dilation_rate))
            return apply_activation(self.activation, outputs)
        # 1-D, as TF builds it: height 1 in inputs and kernels, bias, squeeze
        height_axis = 1 if self.data_format == "channels_last" else 2
        if self.padding == "causal":
            inputs = self._causal_pad(inputs, height_axis)
        x = array.expand_dims(inputs, height_axis, name="ExpandDims")
        depthwise = array.expand_dims(self.depthwise_kernel, 0, name="ExpandDims_1")
        pointwise = array.expand_dims(self.pointwise_kernel, 0, name="ExpandDims_2")
        outputs = self._bias(self._separable(x, depthwise, pointwise, (1, self.strides[0]),
                                             (1, self.dilation_rate[0])), rank=2)
        outputs = array.squeeze(outputs, [height_axis], name="Squeeze")
        return apply_activation(self.activation, outputs)

    def _separable(self, x: Tensor, depthwise, pointwise, strides, dilations) -> Tensor:
        padding = "VALID" if self.padding == "causal" else self.padding.upper()
        stride_list = [1, *strides, 1] if self.data_format == "channels_last" else \
            [1, 1, *strides]
        return nn_more.separable_conv2d(x, depthwise, pointwise, stride_list, padding,
                                        data_format=self._tf_format(2),
                                        dilations=list(dilations))


def _separable_class(rank: int, doc: str):
    class SeparableConvN(_SeparableConv):
        def __init__(self, filters: int, kernel_size, strides=1, padding="valid",
                     data_format="channels_last", dilation_rate=1, depth_multiplier: int = 1,
                     activation: Optional[Callable] = None, use_bias: bool = True,
                     depthwise_initializer=None, pointwise_initializer=None,
                     bias_initializer=zeros_initializer(), depthwise_regularizer=None,
                     pointwise_regularizer=None, bias_regularizer=None,
                     activity_regularizer=None, depthwise_constraint=None,
                     pointwise_constraint=None, bias_constraint=None, trainable: bool = True,
                     name: Optional[str] = None, **kwargs):
            super().__init__(rank, filters, kernel_size, strides=strides, padding=padding,
                             data_format=data_format, dilation_rate=dilation_rate,
                             depth_multiplier=depth_multiplier, activation=activation,
                             use_bias=use_bias, depthwise_initializer=depthwise_initializer,
                             pointwise_initializer=pointwise_initializer,
                             bias_initializer=bias_initializer,
                             depthwise_regularizer=depthwise_regularizer,
                             pointwise_regularizer=pointwise_regularizer,
                             bias_regularizer=bias_regularizer,
                             activity_regularizer=activity_regularizer,
                             depthwise_constraint=depthwise_constraint,
                             pointwise_constraint=pointwise_constraint,
                             bias_constraint=bias_constraint, trainable=trainable, name=name,
                             **kwargs)
    SeparableConvN.__name__ = SeparableConvN.__qualname__ = f"SeparableConv{rank}D"
    SeparableConvN.__doc__ = doc
    return SeparableConvN


SeparableConv1D = _separable_class(1, "Depthwise-separable 1-D convolution layer.")
SeparableConv2D = _separable_class(2, "Depthwise-separable 2-D convolution layer.")


def _separable_function(cls, rank: int):
    def function(inputs, filters: int, kernel_size, strides=1, padding="valid",
                 data_format="channels_last", dilation_rate=1, depth_multiplier: int = 1,
                 activation: Optional[Callable] = None, use_bias: bool = True,
                 depthwise_initializer=None, pointwise_initializer=None,
                 bias_initializer=zeros_initializer(), depthwise_regularizer=None,
                 pointwise_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 depthwise_constraint=None, pointwise_constraint=None, bias_constraint=None,
                 trainable: bool = True, name: Optional[str] = None, reuse=None) -> Tensor:
        layer = cls(filters, kernel_size, strides=strides, padding=padding,
                    data_format=data_format, dilation_rate=dilation_rate,
                    depth_multiplier=depth_multiplier, activation=activation,
                    use_bias=use_bias, depthwise_initializer=depthwise_initializer,
                    pointwise_initializer=pointwise_initializer,
                    bias_initializer=bias_initializer,
                    depthwise_regularizer=depthwise_regularizer,
                    pointwise_regularizer=pointwise_regularizer,
                    bias_regularizer=bias_regularizer,
                    activity_regularizer=activity_regularizer,
                    depthwise_constraint=depthwise_constraint,
                    pointwise_constraint=pointwise_constraint, bias_constraint=bias_constraint,
                    trainable=trainable, name=name, _scope=name, _reuse=reuse)
        return layer.apply(inputs)
    function.__name__ = function.__qualname__ = f"separable_conv{rank}d"
    function.__doc__ = f"Functional form of ``SeparableConv{rank}D``."
    return function


separable_conv1d = _separable_function(SeparableConv1D, 1)
separable_conv2d = _separable_function(SeparableConv2D, 2)

Convolution1D, Convolution2D, Convolution3D = Conv1D, Conv2D, Conv3D
Convolution2DTranspose, Convolution3DTranspose = Conv2DTranspose, Conv3DTranspose
