"""``tf.layers`` core layers: Dense, Dropout, Flatten (class and function forms)."""
from __future__ import annotations

from typing import Callable, Optional

import numpy as np

from gradflow.framework import dtypes
from gradflow.framework.constant import constant, constant_value, convert_to_tensor
from gradflow.framework.graph import Tensor
from gradflow.framework.tensor_shape import TensorShape
from gradflow.layers.base import InputSpec, Layer
from gradflow.ops import array
from gradflow.ops import math as math_ops
from gradflow.ops.functional import cond
from gradflow.ops.linalg import tensordot
from gradflow.ops.nn import bias_add, dropout as nn_dropout
from gradflow.variables import zeros_initializer

__all__ = ["Dense", "dense", "Dropout", "dropout", "Flatten", "flatten"]


def static_training(training) -> Optional[bool]:
    """``training`` as a Python bool when it is known while building, else None."""
    if training is None:
        return False
    if isinstance(training, (bool, np.bool_)):
        return bool(training)
    value = constant_value(training_tensor(training))
    return None if value is None else bool(value)


def training_tensor(training) -> Tensor:
    t = convert_to_tensor(training)
    if t.dtype is not dtypes.bool or t.shape.ndims not in (None, 0):
        raise TypeError(f"`training` must be a scalar bool tensor, got {t.name} of dtype "
                        f"{t.dtype.name} and shape {t.shape}")
    return t


def apply_activation(activation: Optional[Callable], outputs: Tensor) -> Tensor:
    return outputs if activation is None else activation(outputs)


class Dense(Layer):
    """``outputs = activation(inputs @ kernel + bias)``; the kernel is
    [last input dimension, units], applied along the last axis of inputs of any rank."""

    def __init__(self, units: int, activation: Optional[Callable] = None,
                 use_bias: bool = True, kernel_initializer=None,
                 bias_initializer=zeros_initializer(), kernel_regularizer=None,
                 bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
                 bias_constraint=None, trainable: bool = True, name: Optional[str] = None,
                 **kwargs):
        super().__init__(trainable=trainable, name=name,
                         activity_regularizer=activity_regularizer, **kwargs)
        if int(units) < 0:
            raise ValueError("Received an invalid value for `units`, expected a positive "
                             f"integer. Received: units={units}")
        self.units = int(units)
        self.activation = activation
        self.use_bias = bool(use_bias)
        self.kernel_initializer = kernel_initializer
        self.bias_initializer = bias_initializer
        self.kernel_regularizer = kernel_regularizer
        self.bias_regularizer = bias_regularizer
        self.kernel_constraint = kernel_constraint
        self.bias_constraint = bias_constraint
        self.input_spec = InputSpec(min_ndim=2)
        self.kernel = None
        self.bias = None

    def build(self, input_shape) -> None:
        input_shape = TensorShape(input_shape)
        last = input_shape.as_list()[-1] if input_shape.ndims else None
        if last is None:
            raise ValueError("The last dimension of the inputs to a Dense layer should be "
                             f"defined. Found None. Full input shape received: {input_shape}")
        dtype = dtypes.as_dtype(self.dtype or dtypes.float32)
        if not (dtype.is_floating or dtype.is_complex):
            raise TypeError(f"A Dense layer can only be built with a floating-point dtype. "
                            f"Received: dtype={dtype!r}")
        self.input_spec = InputSpec(min_ndim=2, axes={-1: last})
        self.kernel = self.add_weight("kernel", shape=[last, self.units],
                                      initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint, dtype=dtype)
        if self.use_bias:
            self.bias = self.add_weight("bias", shape=[self.units],
                                        initializer=self.bias_initializer,
                                        regularizer=self.bias_regularizer,
                                        constraint=self.bias_constraint, dtype=dtype)

    def call(self, inputs):
        x = inputs if inputs.dtype is self.kernel.dtype.base_dtype else \
            math_ops.cast(inputs, self.kernel.dtype.base_dtype)
        if x.shape.ndims == 2:
            outputs = math_ops.matmul(x, self.kernel, name="MatMul")
        else:
            outputs = tensordot(x, self.kernel, [[x.shape.ndims - 1], [0]])
        if self.use_bias:
            outputs = bias_add(outputs, self.bias, name="BiasAdd")
        return apply_activation(self.activation, outputs)


def dense(inputs, units: int, activation: Optional[Callable] = None, use_bias: bool = True,
          kernel_initializer=None, bias_initializer=zeros_initializer(),
          kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
          kernel_constraint=None, bias_constraint=None, trainable: bool = True,
          name: Optional[str] = None, reuse=None) -> Tensor:
    """Functional form of ``Dense``: builds the layer (scope ``name``) and applies it."""
    layer = Dense(units, activation=activation, use_bias=use_bias,
                  kernel_initializer=kernel_initializer, bias_initializer=bias_initializer,
                  kernel_regularizer=kernel_regularizer, bias_regularizer=bias_regularizer,
                  activity_regularizer=activity_regularizer,
                  kernel_constraint=kernel_constraint, bias_constraint=bias_constraint,
                  trainable=trainable, name=name, _scope=name, _reuse=reuse)
    return layer.apply(inputs)


class Dropout(Layer):
    """Zeroes inputs with probability ``rate`` while training (the rest scaled by
    1 / (1 - rate)); the identity otherwise. ``training`` may be a bool tensor."""

    def __init__(self, rate: float = 0.5, noise_shape=None, seed: Optional[int] = None,
                 name: Optional[str] = None, **kwargs):
        super().__init__(name=name, **kwargs)
        if isinstance(rate, (int, float)) and not 0 <= rate <= 1:
            raise ValueError(f"Invalid value {rate} received for `rate`, expected a value "
                             "between 0 and 1.")
        self.rate = rate
        self.noise_shape = noise_shape
        self.seed = seed

    def _noise_shape(self, inputs: Tensor):
        """``noise_shape`` with its None entries taken from the inputs' dynamic shape."""
        if self.noise_shape is None or isinstance(self.noise_shape, Tensor):
            return self.noise_shape
        entries = list(self.noise_shape)
        if None not in entries:
            return entries
        dynamic = array.shape(inputs)
        return array.stack([dynamic[i] if d is None else constant(int(d), dtype=dtypes.int32)
                            for i, d in enumerate(entries)])

    def call(self, inputs, training=False):
        known = static_training(training)

        def dropped():
            return nn_dropout(inputs, noise_shape=self._noise_shape(inputs), seed=self.seed,
                              rate=self.rate)
        if known is False:
            return array.identity(inputs)
        if known is True:
            return dropped()
        return cond(training_tensor(training), dropped, lambda: array.identity(inputs))


def dropout(inputs, rate: float = 0.5, noise_shape=None, seed: Optional[int] = None,
            training=False, name: Optional[str] = None) -> Tensor:
    """Functional form of ``Dropout``; the identity unless ``training``."""
    return Dropout(rate, noise_shape=noise_shape, seed=seed, name=name).apply(
        inputs, training=training)


class Flatten(Layer):
    """[batch, ...] -> [batch, everything else]; channels-first inputs are transposed to
    channels-last first, so both orders give the same outputs."""

    def __init__(self, data_format: str = "channels_last", name: Optional[str] = None,
                 **kwargs):
        super().__init__(name=name, **kwargs)
        self.data_format = normalize_data_format(data_format)
        self.input_spec = InputSpec(min_ndim=1)

    def call(self, inputs):
        ndims = inputs.shape.ndims
        if self.data_format == "channels_first" and ndims is not None and ndims > 1:
            inputs = array.transpose(inputs, [0, *range(2, ndims), 1])
        if ndims == 1:
            return array.expand_dims(inputs, 1)
        dims = inputs.shape.as_list() if ndims is not None else None
        if dims is not None and None not in dims[1:]:
            size = int(np.prod(dims[1:]))
            return array.reshape(inputs, constant([-1, size], dtype=dtypes.int32))
        batch = array.shape(inputs)[0]
        return array.reshape(inputs, array.stack([batch, constant(-1, dtype=dtypes.int32)]))


def flatten(inputs, name: Optional[str] = None, data_format: str = "channels_last") -> Tensor:
    """Functional form of ``Flatten``."""
    return Flatten(data_format=data_format, name=name).apply(inputs)


def normalize_data_format(value: str) -> str:
    """'channels_last' or 'channels_first' (TF's error for anything else)."""
    normalized = str(value).lower() if value is not None else "channels_last"
    if normalized not in ("channels_last", "channels_first"):
        raise ValueError("The `data_format` argument must be one of \"channels_first\", "
                         f"\"channels_last\". Received: {value}")
    return normalized
