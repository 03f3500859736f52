"""``tf.layers`` batch normalization (class and function forms).

Training normalises with the batch statistics and adds the moving-average updates
(``moving -= (moving - batch) * (1 - momentum)``, ops ``AssignMovingAvg`` and
``AssignMovingAvg_1``) to the layer's ``updates`` and ``GraphKeys.UPDATE_OPS``; inference
uses the moving statistics. With ``training`` a bool tensor the statistics are chosen by
``cond`` and the updates leave the moving statistics unchanged when it is False.

Where TF would use its fused kernel (4-D or 5-D float16/32 inputs normalised over the
channel axis, ``fused`` not False) the numbers follow that kernel: epsilon at least
1.001e-5 and the moving variance updated with the unbiased batch variance.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from gradflow.framework import dtypes
from gradflow.framework.constant import constant
from gradflow.framework.graph import Tensor, name_scope
from gradflow.framework.tensor_shape import TensorShape
from gradflow.layers.base import InputSpec, Layer
from gradflow.layers.core import static_training, training_tensor
from gradflow.ops import array
from gradflow.ops import math as math_ops
from gradflow.ops.functional import cond
from gradflow.ops.nn import moments
from gradflow.ops.state import assign_sub
from gradflow.variables import ones_initializer, zeros_initializer

__all__ = ["BatchNormalization", "batch_normalization", "BatchNorm"]

_MIN_FUSED_EPSILON = 1.001e-5
_FUSED_DTYPES = (dtypes.float16, dtypes.bfloat16, dtypes.float32)


class BatchNormalization(Layer):
    """Normalises inputs over every axis but ``axis`` (batch statistics while training,
    moving statistics otherwise), then scales by ``gamma`` and shifts by ``beta``."""

    def __init__(self, axis=-1, momentum: float = 0.99, epsilon: float = 1e-3,
                 center: bool = True, scale: bool = True,
                 beta_initializer=zeros_initializer(), gamma_initializer=ones_initializer(),
                 moving_mean_initializer=zeros_initializer(),
                 moving_variance_initializer=ones_initializer(), beta_regularizer=None,
                 gamma_regularizer=None, beta_constraint=None, gamma_constraint=None,
                 renorm: bool = False, renorm_clipping=None, renorm_momentum: float = 0.99,
                 fused: Optional[bool] = None, trainable: bool = True,
                 virtual_batch_size: Optional[int] = None, adjustment=None,
                 name: Optional[str] = None, **kwargs):
        super().__init__(trainable=trainable, name=name, **kwargs)
        if renorm or renorm_clipping is not None:
            raise ValueError("BatchNormalization: renorm=True (batch renormalization) is not "
                             "supported")
        if virtual_batch_size is not None:
            raise ValueError("BatchNormalization: virtual_batch_size is not supported "
                             f"(got {virtual_batch_size})")
        if adjustment is not None:
            raise ValueError("BatchNormalization: adjustment is not supported")
        if fused not in (None, True, False):
            raise ValueError(f"BatchNormalization: fused must be None, True or False, got "
                             f"{fused!r}")
        if isinstance(axis, (list, tuple)):
            self.axis = [int(a) for a in axis]
        elif isinstance(axis, (int, np.integer)):
            self.axis = int(axis)
        else:
            raise TypeError("Expected an int or a list/tuple of ints for the argument 'axis', "
                            f"but received: {axis}")
        self.momentum = float(momentum)
        self.epsilon = float(epsilon)
        self.center = bool(center)
        self.scale = bool(scale)
        self.beta_initializer = beta_initializer
        self.gamma_initializer = gamma_initializer
        self.moving_mean_initializer = moving_mean_initializer
        self.moving_variance_initializer = moving_variance_initializer
        self.beta_regularizer = beta_regularizer
        self.gamma_regularizer = gamma_regularizer
        self.beta_constraint = beta_constraint
        self.gamma_constraint = gamma_constraint
        self.renorm = False
        self.fused = fused
        self.gamma = None
        self.beta = None
        self.moving_mean = None
        self.moving_variance = None
        self._axes: list[int] = []
        self._use_fused = False

    def _normalized_axes(self, ndims: int) -> list[int]:
        axes = [self.axis] if isinstance(self.axis, int) else list(self.axis)
        axes = [a + ndims if a < 0 else a for a in axes]
        for a in axes:
            if not 0 <= a < ndims:
                raise ValueError("Invalid value for `axis` argument. Expected 0 <= axis < "
                                 f"inputs.rank (with inputs.rank={ndims}). Received: "
                                 f"axis={tuple(axes)}")
        if len(set(axes)) != len(axes):
            raise ValueError(f"Duplicate axis: {self.axis}")
        return sorted(axes)

    def build(self, input_shape) -> None:
        input_shape = TensorShape(input_shape)
        ndims = input_shape.ndims
        if ndims is None:
            raise ValueError(f"Input has undefined rank. Received: input_shape={input_shape}.")
        self._axes = self._normalized_axes(ndims)
        dims = input_shape.as_list()
        for a in self._axes:
            if dims[a] is None:
                raise ValueError("Input has undefined `axis` dimension. Received input with "
                                 f"shape {tuple(dims)} and axis={self.axis}")
        self.input_spec = InputSpec(ndim=ndims, axes={a: dims[a] for a in self._axes})
        param_dtype = dtypes.float32 if dtypes.as_dtype(self.dtype or "float32") in (
            dtypes.float16, dtypes.bfloat16) else dtypes.as_dtype(self.dtype or "float32")
        self._use_fused = self.fused is not False and ndims in (4, 5) and \
            self._axes in ([1], [ndims - 1]) and \
            dtypes.as_dtype(self.dtype or "float32") in _FUSED_DTYPES
        if len(self._axes) == 1:
            param_shape = [dims[self._axes[0]]]
        else:
            param_shape = [dims[a] if a in self._axes else 1 for a in range(ndims)]
        if self.scale:
            self.gamma = self.add_weight("gamma", shape=param_shape, dtype=param_dtype,
                                         initializer=self.gamma_initializer,
                                         regularizer=self.gamma_regularizer,
                                         constraint=self.gamma_constraint)
        if self.center:
            self.beta = self.add_weight("beta", shape=param_shape, dtype=param_dtype,
                                        initializer=self.beta_initializer,
                                        regularizer=self.beta_regularizer,
                                        constraint=self.beta_constraint)
        self.moving_mean = self.add_weight("moving_mean", shape=param_shape, dtype=param_dtype,
                                           initializer=self.moving_mean_initializer,
                                           trainable=False)
        self.moving_variance = self.add_weight("moving_variance", shape=param_shape,
                                               dtype=param_dtype,
                                               initializer=self.moving_variance_initializer,
                                               trainable=False)

    def _broadcast(self, t: Optional[Tensor], ndims: int) -> Optional[Tensor]:
        """A 1-D parameter reshaped to broadcast against the inputs (when its axis is not
        the last one)."""
        if t is None or len(self._axes) != 1 or self._axes[0] == ndims - 1:
            return t
        shape = [1] * ndims
        shape[self._axes[0]] = -1
        return array.reshape(t, shape)

    def _update(self, variable, value: Tensor, name: str) -> Tensor:
        """``variable -= (variable - value) * (1 - momentum)``, as TF names it (the name
        scope made unique: ``AssignMovingAvg``, ``AssignMovingAvg_1``...)."""
        with name_scope(name) as scope:
            decay = constant(1.0 - self.momentum, dtype=variable.dtype.base_dtype,
                             name="decay")
            delta = math_ops.multiply(math_ops.subtract(variable, value, name="sub"), decay,
                                      name="mul")
            return assign_sub(variable, delta, name=scope)

    def call(self, inputs, training=False):
        ndims = inputs.shape.ndims
        param_dtype = self.moving_mean.dtype.base_dtype
        x = inputs if inputs.dtype is param_dtype else math_ops.cast(inputs, param_dtype)
        known = static_training(training)
        epsilon = max(self.epsilon, _MIN_FUSED_EPSILON) if self._use_fused else self.epsilon
        if known is False:
            mean, variance = self.moving_mean, self.moving_variance
        else:
            reduction = [a for a in range(ndims) if a not in self._axes]
            batch_mean, batch_variance = moments(x, reduction, keep_dims=len(self._axes) > 1)
            if known is True:
                mean, variance = batch_mean, batch_variance
            else:
                flag = training_tensor(training)
                moving_mean = array.identity(self.moving_mean)
                moving_variance = array.identity(self.moving_variance)
                mean = cond(flag, lambda: batch_mean, lambda: moving_mean)
                variance = cond(flag, lambda: batch_variance, lambda: moving_variance)
            update_variance = variance
            if self._use_fused and known is True:
                update_variance = variance * self._bessel(x, reduction)
            elif self._use_fused:
                unbiased = batch_variance * self._bessel(x, reduction)
                update_variance = cond(flag, lambda: unbiased, lambda: moving_variance)
            self.add_update([self._update(self.moving_mean, mean, "AssignMovingAvg"),
                             self._update(self.moving_variance, update_variance,
                                          "AssignMovingAvg")])
        outputs = _normalize(x, self._broadcast(mean, ndims), self._broadcast(variance, ndims),
                             self._broadcast(self.beta, ndims),
                             self._broadcast(self.gamma, ndims), epsilon)
        return outputs if outputs.dtype is inputs.dtype else math_ops.cast(outputs, inputs.dtype)

    @staticmethod
    def _bessel(x: Tensor, reduction: list[int]) -> Tensor:
        """n / (n - 1) for n the number of values each statistic is taken over."""
        dynamic = array.shape(x)
        count = math_ops.cast(math_ops.reduce_prod(array.gather(dynamic, reduction)), x.dtype)
        one = constant(1, dtype=x.dtype)
        return count / math_ops.maximum(count - one, one)


def _normalize(x: Tensor, mean, variance, offset, scale, epsilon: float) -> Tensor:
    """(x - mean) / sqrt(variance + epsilon) * scale + offset, as x * inv + (offset - mean *
    inv) under ``batchnorm/`` with TF's op names (``batchnorm/add_1`` is the output)."""
    with name_scope("batchnorm"):
        # TF1 writes these with operators: add, mul, mul_1, ..., sub, add_1
        inv = math_ops.rsqrt(variance + constant(epsilon, dtype=x.dtype))
        if scale is not None:
            inv = inv * scale
        scaled = x * inv
        shifted_mean = mean * inv
        shift = math_ops.negative(shifted_mean) if offset is None else offset - shifted_mean
        return scaled + shift


def batch_normalization(inputs, axis=-1, momentum: float = 0.99, epsilon: float = 1e-3,
                        center: bool = True, scale: bool = True,
                        beta_initializer=zeros_initializer(),
                        gamma_initializer=ones_initializer(),
                        moving_mean_initializer=zeros_initializer(),
                        moving_variance_initializer=ones_initializer(),
                        beta_regularizer=None, gamma_regularizer=None, beta_constraint=None,
                        gamma_constraint=None, training=False, trainable: bool = True,
                        name: Optional[str] = None, reuse=None, renorm: bool = False,
                        renorm_clipping=None, renorm_momentum: float = 0.99,
                        fused: Optional[bool] = None, virtual_batch_size=None,
                        adjustment=None) -> Tensor:
    """Functional form of ``BatchNormalization``. While training, run the moving-average
    updates, e.g. ``with tf.control_dependencies(tf.get_collection(UPDATE_OPS))``."""
    layer = BatchNormalization(
        axis=axis, momentum=momentum, epsilon=epsilon, center=center, scale=scale,
        beta_initializer=beta_initializer, gamma_initializer=gamma_initializer,
        moving_mean_initializer=moving_mean_initializer,
        moving_variance_initializer=moving_variance_initializer,
        beta_regularizer=beta_regularizer, gamma_regularizer=gamma_regularizer,
        beta_constraint=beta_constraint, gamma_constraint=gamma_constraint, renorm=renorm,
        renorm_clipping=renorm_clipping, renorm_momentum=renorm_momentum, fused=fused,
        trainable=trainable, virtual_batch_size=virtual_batch_size, adjustment=adjustment,
        name=name, _scope=name, _reuse=reuse)
    return layer.apply(inputs, training=training)


BatchNorm = BatchNormalization
