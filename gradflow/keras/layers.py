"""``tf.keras.layers``: keras's constructors (string activations and initializers, keras
defaults, ``input_shape``) over gradflow.layers' maths, plus the layers tf.layers lacks
(Activation, Reshape, global pooling, Embedding, merges, Lambda)."""
from __future__ import annotations

import operator
from typing import Callable, Optional, Sequence

import numpy as np

from gradflow.framework import dtypes
from gradflow.framework.constant import constant
from gradflow.framework.graph import name_scope
from gradflow.framework.tensor_shape import TensorShape
from gradflow.keras import activations, constraints, initializers, regularizers
from gradflow.keras.engine import Input, InputLayer, Layer
from gradflow.keras.recurrent import GRU, LSTM, GRUCell, LSTMCell, SimpleRNN, SimpleRNNCell
from gradflow.keras.wrappers import Bidirectional, TimeDistributed
from gradflow.layers import convolutional as tf_conv
from gradflow.layers import core as tf_core
from gradflow.layers import normalization as tf_norm
from gradflow.layers import pooling as tf_pool
from gradflow.layers.base import InputSpec
from gradflow.ops import array
from gradflow.ops import math as math_ops
from gradflow.ops.image_resize import resize_bilinear, resize_nearest_neighbor
from gradflow.ops.nn import embedding_lookup, leaky_relu

__all__ = ["Layer", "InputLayer", "Input", "Dense", "Activation", "Dropout", "Flatten",
           "Reshape", "Conv1D", "Conv2D", "Conv2DTranspose", "Convolution1D", "Convolution2D",
           "Convolution2DTranspose", "MaxPooling1D", "MaxPool1D", "AveragePooling1D",
           "AvgPool1D", "MaxPooling2D", "MaxPool2D", "AveragePooling2D", "AvgPool2D",
           "GlobalAveragePooling1D", "GlobalMaxPooling1D", "GlobalAveragePooling2D",
           "GlobalMaxPooling2D", "UpSampling2D", "ZeroPadding2D", "LeakyReLU", "ReLU",
           "Softmax", "Permute", "RepeatVector", "SimpleRNN", "LSTM", "GRU", "SimpleRNNCell",
           "LSTMCell", "GRUCell", "TimeDistributed", "Bidirectional",
           "BatchNormalization", "Embedding", "Concatenate", "Add", "Subtract", "Multiply",
           "Average", "Maximum", "Minimum", "Lambda", "concatenate", "add", "subtract",
           "multiply", "average", "maximum", "minimum"]


def _weight_args(kwargs: dict, *names: str) -> dict:
    """Keras's named initializers, regularizers and constraints resolved to callables."""
    resolved = {}
    for name in names:
        value = kwargs.pop(name, None)
        if name.endswith("initializer"):
            resolved[name] = initializers.get(value)
        elif name.endswith("regularizer"):
            resolved[name] = regularizers.get(value)
        else:
            resolved[name] = constraints.get(value)
    return resolved


class Dense(tf_core.Dense, Layer):
    """``activation(inputs @ kernel + bias)`` (kernel glorot-uniform, bias zeros)."""

    def __init__(self, units: int, activation=None, use_bias: bool = True,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros", **kwargs):
        weights = _weight_args(kwargs, "kernel_regularizer", "bias_regularizer",
                               "kernel_constraint", "bias_constraint")
        super().__init__(units, activation=_activation(activation), use_bias=use_bias,
                         kernel_initializer=initializers.get(kernel_initializer),
                         bias_initializer=initializers.get(bias_initializer),
                         **weights, **kwargs)


def _activation(identifier) -> Optional[Callable]:
    """None for no activation (keras's 'linear'), else the activation function."""
    if identifier is None:
        return None
    function = activations.get(identifier)
    return None if function is activations.linear else function


class Activation(Layer):
    """Applies an activation function (a name such as 'relu', or a callable)."""

    def __init__(self, activation, **kwargs):
        super().__init__(**kwargs)
        self.activation = activations.get(activation)

    def call(self, inputs):
        return self.activation(inputs)


class Dropout(tf_core.Dropout, Layer):
    """Drops inputs with probability ``rate`` while training (the learning phase, unless
    ``training`` is passed)."""

    def __init__(self, rate: float, noise_shape=None, seed: Optional[int] = None, **kwargs):
        super().__init__(rate, noise_shape=noise_shape, seed=seed, **kwargs)


class Flatten(tf_core.Flatten, Layer):
    """[batch, ...] -> [batch, everything else]."""

    def __init__(self, data_format: Optional[str] = None, **kwargs):
        super().__init__(data_format=data_format or "channels_last", **kwargs)


class Reshape(Layer):
    """Reshapes each example to ``target_shape`` (one entry may be -1)."""

    def __init__(self, target_shape: Sequence[int], **kwargs):
        super().__init__(**kwargs)
        self.target_shape = tuple(int(d) for d in target_shape)
        if sum(d == -1 for d in self.target_shape) > 1:
            raise ValueError("There must be at most one unknown dimension in output_shape. "
                             f"Received: output_shape={self.target_shape}.")

    def call(self, inputs):
        known = inputs.shape.as_list()[1:] if inputs.shape.ndims is not None else None
        target = list(self.target_shape)
        if known is not None and None not in known and -1 in target:
            rest = int(np.prod([d for d in target if d != -1]))
            total = int(np.prod(known))
            if rest == 0 or total % rest:
                raise ValueError(f"total size of new array must be unchanged, input_shape = "
                                 f"{known}, output_shape = {list(self.target_shape)}")
            target[target.index(-1)] = total // rest
        elif known is not None and None not in known and \
                int(np.prod(known)) != int(np.prod(target)):
            raise ValueError(f"total size of new array must be unchanged, input_shape = "
                             f"{known}, output_shape = {list(self.target_shape)}")
        batch = array.shape(inputs)[0]
        shape = array.stack([batch] + [constant(d, dtype=dtypes.int32) for d in target])
        outputs = array.reshape(inputs, shape)
        outputs.set_shape(TensorShape([inputs.shape.as_list()[0] if known is not None
                                       else None] + [None if d == -1 else d for d in target]))
        return outputs


def _keras_conv(base, rank: int, doc: str):
    """A keras convolution class over a gradflow.layers one: keras's defaults (strides
    1, glorot-uniform kernel, zero bias) and named initializers/regularizers/constraints."""
    class KerasConv(base, Layer):
        def __init__(self, filters: int, kernel_size, strides=(1,) * rank,
                     padding: str = "valid", data_format: Optional[str] = None,
                     activation=None, use_bias: bool = True,
                     kernel_initializer="glorot_uniform", bias_initializer="zeros",
                     **kwargs):
            if kwargs.get("groups", 1) != 1:
                raise ValueError(f"{base.__name__}: groups={kwargs['groups']} is not "
                                 "supported")
            kwargs.pop("groups", None)
            weights = _weight_args(kwargs, "kernel_regularizer", "bias_regularizer",
                                   "kernel_constraint", "bias_constraint")
            super().__init__(filters, kernel_size, strides=strides, padding=padding,
                             data_format=data_format or "channels_last",
                             activation=_activation(activation), use_bias=use_bias,
                             kernel_initializer=initializers.get(kernel_initializer),
                             bias_initializer=initializers.get(bias_initializer),
                             **weights, **kwargs)
    KerasConv.__name__ = KerasConv.__qualname__ = base.__name__
    KerasConv.__doc__ = doc
    return KerasConv


Conv1D = _keras_conv(tf_conv.Conv1D, 1, "1-D convolution over [batch, steps, channels].")
Conv2D = _keras_conv(tf_conv.Conv2D, 2, "2-D convolution (kernel glorot-uniform, bias "
                                        "zeros).")
Conv2DTranspose = _keras_conv(tf_conv.Conv2DTranspose, 2, "Transposed 2-D convolution.")
Convolution1D, Convolution2DTranspose = Conv1D, Conv2DTranspose
Convolution2D = Conv2D


def _keras_pooling(base, rank: int):
    """A keras pooling class: ``pool_size`` 2 per axis, ``strides`` defaulting to it."""
    class KerasPooling(base, Layer):
        def __init__(self, pool_size=(2,) * rank, strides=None, padding: str = "valid",
                     data_format: Optional[str] = None, **kwargs):
            super().__init__(pool_size, strides, padding=padding,
                             data_format=data_format or "channels_last", **kwargs)
    KerasPooling.__name__ = KerasPooling.__qualname__ = base.__name__
    KerasPooling.__doc__ = base.__doc__
    return KerasPooling


MaxPooling1D = _keras_pooling(tf_pool.MaxPooling1D, 1)
AveragePooling1D = _keras_pooling(tf_pool.AveragePooling1D, 1)
MaxPooling2D = _keras_pooling(tf_pool.MaxPooling2D, 2)
AveragePooling2D = _keras_pooling(tf_pool.AveragePooling2D, 2)
MaxPool1D, AvgPool1D = MaxPooling1D, AveragePooling1D
MaxPool2D, AvgPool2D = MaxPooling2D, AveragePooling2D


class _GlobalPooling(Layer):
    """A reduction over every spatial axis ([batch, ..., channels] -> [batch, channels])."""
    _rank = 2

    def __init__(self, data_format: Optional[str] = None, keepdims: bool = False, **kwargs):
        super().__init__(**kwargs)
        self.data_format = tf_core.normalize_data_format(data_format)
        self.keepdims = bool(keepdims)
        self.input_spec = InputSpec(ndim=self._rank + 2)

    def call(self, inputs):
        first = 1 if self.data_format == "channels_last" else 2
        axes = list(range(first, first + self._rank))
        return self._reduce(inputs, axis=axes, keepdims=self.keepdims)


class GlobalAveragePooling1D(_GlobalPooling):
    """The mean over the steps: [batch, steps, c] -> [batch, c]."""
    _rank = 1
    _reduce = staticmethod(math_ops.reduce_mean)


class GlobalMaxPooling1D(_GlobalPooling):
    """The maximum over the steps: [batch, steps, c] -> [batch, c]."""
    _rank = 1
    _reduce = staticmethod(math_ops.reduce_max)


class GlobalAveragePooling2D(_GlobalPooling):
    """The mean over the two spatial axes: [batch, h, w, c] -> [batch, c]."""
    _reduce = staticmethod(math_ops.reduce_mean)


class GlobalMaxPooling2D(_GlobalPooling):
    """The maximum over the two spatial axes: [batch, h, w, c] -> [batch, c]."""
    _reduce = staticmethod(math_ops.reduce_max)


class UpSampling2D(Layer):
    """Scales rows and columns up by ``size``: a ``resize`` scope holding TF's
    ``ResizeNearestNeighbor`` (or ``ResizeBilinear``) with half-pixel centres, as
    tf.keras builds it."""

    _RESIZERS = {"nearest": resize_nearest_neighbor, "bilinear": resize_bilinear}

    def __init__(self, size=(2, 2), data_format: Optional[str] = None,
                 interpolation: str = "nearest", **kwargs):
        super().__init__(**kwargs)
        if interpolation not in self._RESIZERS:
            raise ValueError(f"UpSampling2D: interpolation={interpolation!r} is not "
                             "supported (only 'nearest' and 'bilinear')")
        self.size = tf_conv.normalize_tuple(size, 2, "size")
        self.data_format = tf_core.normalize_data_format(data_format)
        self.interpolation = interpolation
        self.input_spec = InputSpec(ndim=4)

    def call(self, inputs):
        first = 1 if self.data_format == "channels_last" else 2
        static = inputs.shape.as_list()[first:first + 2]
        if None in static:
            sizes = array.shape(inputs)[first:first + 2]
        else:
            sizes = constant(static, dtype=dtypes.int32)
        sizes = sizes * constant(np.array(self.size, dtype=np.int32))
        images = inputs if first == 1 else array.transpose(inputs, [0, 2, 3, 1])
        with name_scope(None, "resize", [images, sizes]):
            outputs = self._RESIZERS[self.interpolation](images, sizes,
                                                         half_pixel_centers=True)
        if None not in static:  # the product of two constants: TF's shapes fold it
            dims = outputs.shape.as_list()
            dims[1:3] = [d * k for d, k in zip(static, self.size, strict=True)]
            outputs.set_shape(TensorShape(dims))
        return outputs if first == 1 else array.transpose(outputs, [0, 3, 1, 2])


class ZeroPadding2D(Layer):
    """Pads rows and columns with zeros: ``padding`` an int, (rows, cols), or
    ((top, bottom), (left, right))."""

    def __init__(self, padding=(1, 1), data_format: Optional[str] = None, **kwargs):
        super().__init__(**kwargs)
        if isinstance(padding, int):
            padding = ((padding, padding), (padding, padding))
        elif all(isinstance(p, int) for p in padding):
            padding = tuple((int(p), int(p)) for p in padding)
        if len(padding) != 2 or any(len(p) != 2 for p in padding):
            raise ValueError("`padding` should have two elements. Received: "
                             f"padding={padding}.")
        self.padding = tuple(tuple(int(v) for v in p) for p in padding)
        self.data_format = tf_core.normalize_data_format(data_format)
        self.input_spec = InputSpec(ndim=4)

    def call(self, inputs):
        none = [0, 0]
        pads = [none, *map(list, self.padding), none] if self.data_format == \
            "channels_last" else [none, none, *map(list, self.padding)]
        return array.pad(inputs, pads)


class LeakyReLU(Layer):
    """``x`` for x > 0, ``alpha * x`` otherwise (alpha 0.3)."""

    def __init__(self, alpha: float = 0.3, **kwargs):
        super().__init__(**kwargs)
        self.alpha = float(alpha)

    def call(self, inputs):
        return leaky_relu(inputs, alpha=self.alpha)


class ReLU(Layer):
    """``activations.relu`` as a layer (``max_value``, ``negative_slope``, ``threshold``)."""

    def __init__(self, max_value: Optional[float] = None, negative_slope: float = 0.0,
                 threshold: float = 0.0, **kwargs):
        super().__init__(**kwargs)
        for argument, value in (("max_value", max_value), ("negative_slope", negative_slope),
                                ("threshold", threshold)):
            if value is not None and value < 0:
                raise ValueError(f"{argument} of a ReLU layer cannot be a negative value. "
                                 f"Received: {value}")
        self.max_value, self.negative_slope, self.threshold = max_value, negative_slope, \
            threshold

    def call(self, inputs):
        return activations.relu(inputs, alpha=self.negative_slope, max_value=self.max_value,
                                threshold=self.threshold)


class Softmax(Layer):
    """Softmax over ``axis`` as a layer."""

    def __init__(self, axis: int = -1, **kwargs):
        super().__init__(**kwargs)
        self.axis = axis

    def call(self, inputs):
        return activations.softmax(inputs, axis=self.axis)


class Permute(Layer):
    """Reorders the non-batch axes: ``dims`` are 1-based, as keras counts them."""

    def __init__(self, dims: Sequence[int], **kwargs):
        super().__init__(**kwargs)
        self.dims = tuple(int(d) for d in dims)
        if sorted(self.dims) != list(range(1, len(self.dims) + 1)):
            raise ValueError("Invalid permutation argument `dims` for Permute Layer. The set "
                             "of indices in `dims` must be consecutive and start from 1. "
                             f"Received dims={dims}")

    def call(self, inputs):
        return array.transpose(inputs, [0, *self.dims])


class RepeatVector(Layer):
    """[batch, features] -> [batch, n, features]."""

    def __init__(self, n: int, **kwargs):
        super().__init__(**kwargs)
        self.n = int(n)
        self.input_spec = InputSpec(ndim=2)

    def call(self, inputs):
        return array.tile(array.expand_dims(inputs, 1), [1, self.n, 1])


class BatchNormalization(tf_norm.BatchNormalization, Layer):
    """Batch statistics while training (the learning phase, unless ``training`` is
    passed), moving statistics otherwise; the moving-average updates go to the layer's
    ``updates`` (``fit`` runs them)."""

    def __init__(self, axis=-1, momentum: float = 0.99, epsilon: float = 1e-3,
                 center: bool = True, scale: bool = True, beta_initializer="zeros",
                 gamma_initializer="ones", moving_mean_initializer="zeros",
                 moving_variance_initializer="ones", **kwargs):
        weights = _weight_args(kwargs, "beta_regularizer", "gamma_regularizer",
                               "beta_constraint", "gamma_constraint")
        super().__init__(axis=axis, momentum=momentum, epsilon=epsilon, center=center,
                         scale=scale, beta_initializer=initializers.get(beta_initializer),
                         gamma_initializer=initializers.get(gamma_initializer),
                         moving_mean_initializer=initializers.get(moving_mean_initializer),
                         moving_variance_initializer=initializers.get(
                             moving_variance_initializer), **weights, **kwargs)


class Embedding(Layer):
    """Rows of an [input_dim, output_dim] table looked up by integer ids."""

    def __init__(self, input_dim: int, output_dim: int, embeddings_initializer="uniform",
                 embeddings_regularizer=None, activity_regularizer=None,
                 embeddings_constraint=None, mask_zero: bool = False,
                 input_length: Optional[int] = None, **kwargs):
        if mask_zero:
            raise ValueError("Embedding: mask_zero=True is not supported (no masking)")
        if int(input_dim) <= 0 or int(output_dim) <= 0:
            raise ValueError("Both `input_dim` and `output_dim` should be positive, Received "
                             f"input_dim = {input_dim} and output_dim = {output_dim}")
        if "input_shape" not in kwargs and input_length is not None:
            kwargs["input_shape"] = (input_length,)
        kwargs.setdefault("dtype", "float32")
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        self.input_dim = int(input_dim)
        self.output_dim = int(output_dim)
        self.embeddings_initializer = initializers.get(embeddings_initializer)
        self.embeddings_regularizer = regularizers.get(embeddings_regularizer)
        self.embeddings_constraint = constraints.get(embeddings_constraint)
        self.input_length = input_length
        self.embeddings = None

    def build(self, input_shape) -> None:
        self.embeddings = self.add_weight(
            "embeddings", shape=[self.input_dim, self.output_dim],
            initializer=self.embeddings_initializer, regularizer=self.embeddings_regularizer,
            constraint=self.embeddings_constraint, dtype=self._dtype)

    def call(self, inputs):
        ids = inputs if inputs.dtype in (dtypes.int32, dtypes.int64) else \
            math_ops.cast(inputs, dtypes.int32)
        return embedding_lookup(self.embeddings, ids)


class _Merge(Layer):
    """A layer taking a list of at least two tensors of one shape."""

    def _check_inputs(self, inputs) -> list:
        if not isinstance(inputs, list) or len(inputs) < 2:
            raise ValueError("A merge layer should be called on a list of at least 2 inputs. "
                             f"Got {len(inputs) if isinstance(inputs, list) else 1} inputs.")
        return inputs

    def call(self, inputs):
        inputs = self._check_inputs(inputs)
        output = inputs[0]
        for other in inputs[1:]:
            output = self._merge(output, other)
        return self._finish(output, len(inputs))

    @staticmethod
    def _finish(output, count: int):
        return output


class Add(_Merge):
    """The elementwise sum of its inputs (ops ``add``, ``add_1``... as keras's ``+=``)."""
    _merge = staticmethod(operator.add)


class Subtract(_Merge):
    """``inputs[0] - inputs[1]`` (exactly two inputs)."""

    def _check_inputs(self, inputs) -> list:
        if not isinstance(inputs, list) or len(inputs) != 2:
            raise ValueError("A `Subtract` layer should be called on exactly 2 inputs")
        return inputs

    _merge = staticmethod(operator.sub)


class Multiply(_Merge):
    """The elementwise product of its inputs."""
    _merge = staticmethod(operator.mul)


class Maximum(_Merge):
    _merge = staticmethod(math_ops.maximum)


class Minimum(_Merge):
    _merge = staticmethod(math_ops.minimum)


class Average(_Merge):
    """The elementwise mean of its inputs."""
    _merge = staticmethod(operator.add)

    @staticmethod
    def _finish(output, count: int):
        return output / constant(float(count), dtype=output.dtype.base_dtype)


class Concatenate(Layer):
    """Joins a list of tensors along ``axis``."""

    def __init__(self, axis: int = -1, **kwargs):
        super().__init__(**kwargs)
        self.axis = int(axis)

    def call(self, inputs):
        if not isinstance(inputs, list) or len(inputs) < 2:
            raise ValueError("A `Concatenate` layer should be called on a list of at least 1 "
                             "input. Received: input_shape="
                             f"{[t.shape for t in inputs] if isinstance(inputs, list) else 1}")
        return array.concat(inputs, self.axis)


class Lambda(Layer):
    """Wraps ``function(inputs, **arguments)`` as a layer (it makes no weights)."""

    def __init__(self, function: Callable, output_shape=None, mask=None,
                 arguments: Optional[dict] = None, **kwargs):
        if mask is not None:
            raise ValueError("Lambda: mask is not supported (no masking)")
        super().__init__(**kwargs)
        self.function = function
        self.arguments = dict(arguments or {})
        self._output_shape = output_shape

    def call(self, inputs):
        return self.function(inputs, **self.arguments)


def _merge_function(cls):
    def merge(inputs, **kwargs):
        return cls(**kwargs)(inputs)
    merge.__name__ = merge.__qualname__ = cls.__name__.lower()
    merge.__doc__ = f"Functional form of ``{cls.__name__}``."
    return merge


add, subtract, multiply = _merge_function(Add), _merge_function(Subtract), \
    _merge_function(Multiply)
average, maximum, minimum = _merge_function(Average), _merge_function(Maximum), \
    _merge_function(Minimum)


def concatenate(inputs, axis: int = -1, **kwargs):
    """Functional form of ``Concatenate``."""
    return Concatenate(axis=axis, **kwargs)(inputs)
