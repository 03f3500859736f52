"""Normalisation (moments, batch normalisation, l2_normalize) and dropout."""
from __future__ import annotations

from typing import Optional

from gradflow.framework import dtypes
from gradflow.framework.constant import constant, convert_to_tensor
from gradflow.framework.graph import Tensor, name_scope
from gradflow.ops import array
from gradflow.ops import math as math_ops
from gradflow.ops.common import as_tensor, constructor
from gradflow.ops.nn.helpers import axis_alias, check_rank, floating_tensor, scalar
from gradflow.ops.random import random_uniform


# --------------------------------------------------------------------- normalisation
@constructor("l2_normalize", "x", "axis", "epsilon", "dim", single_op=False)
def l2_normalize(x, axis=None, epsilon: float = 1e-12, name: Optional[str] = None,
                 dim=None) -> Tensor:
    """x / sqrt(max(sum(x ** 2, axis), epsilon))."""
    axis = axis_alias(axis, dim)
    with name_scope(name, "l2_normalize", [x]) as scope:
        x = floating_tensor(x, "l2_normalize", "x")
        square_sum = math_ops.reduce_sum(math_ops.square(x), axis, keepdims=True)
        inverse_norm = math_ops.rsqrt(math_ops.maximum(square_sum, scalar(epsilon, x)))
        return math_ops.multiply(x, inverse_norm, name=scope)


@constructor("moments", "x", "axes", "shift", "keep_dims", "keepdims", single_op=False)
def moments(x, axes, shift=None, name: Optional[str] = None, keep_dims=None,
            keepdims=None) -> tuple[Tensor, Tensor]:
    """Mean and (biased) variance of ``x`` over ``axes``; float16 is summed in float32."""
    if keep_dims is not None and keepdims is not None:
        raise ValueError("Cannot specify both 'keep_dims' and 'keepdims'.")
    keep = bool(keepdims if keepdims is not None else keep_dims)
    with name_scope(name, "moments", [x, axes]):
        x = floating_tensor(x, "moments", "x")
        y = math_ops.cast(x, dtypes.float32) if x.dtype is dtypes.float16 else x
        mean = math_ops.reduce_mean(y, axes, keepdims=True, name="mean")
        # Not stop_gradient(mean) as TF does: that would make second derivatives wrong.
        variance = math_ops.reduce_mean(math_ops.squared_difference(y, mean), axes,
                                        keepdims=True, name="variance")
        if not keep:
            squeezed = [axes] if isinstance(axes, int) else list(axes)
            mean = array.squeeze(mean, squeezed)
            variance = array.squeeze(variance, squeezed)
        return math_ops.cast(mean, x.dtype), math_ops.cast(variance, x.dtype)


@constructor("batchnorm", "x", "mean", "variance", "offset", "scale", "variance_epsilon",
             single_op=False)
def batch_normalization(x, mean, variance, offset, scale, variance_epsilon: float,
                        name: Optional[str] = None) -> Tensor:
    """scale * (x - mean) / sqrt(variance + epsilon) + offset (offset/scale may be None)."""
    with name_scope(name, "batchnorm", [x, mean, variance, scale, offset]) as scope:
        x = floating_tensor(x, "batch_normalization", "x")
        mean = as_tensor(mean, dtype=None if isinstance(mean, Tensor) else x.dtype, like=x)
        variance, scale, offset = (None if v is None else as_tensor(
            v, dtype=None if isinstance(v, Tensor) else mean.dtype, like=x)
            for v in (variance, scale, offset))
        inv = math_ops.rsqrt(variance + scalar(variance_epsilon, variance))
        if scale is not None:
            inv = inv * scale
        shift = -mean * inv if offset is None else offset - mean * inv
        return math_ops.add(x * math_ops.cast(inv, x.dtype), math_ops.cast(shift, x.dtype),
                            name=scope)


_MIN_FUSED_EPSILON = 1.001e-5  # the smallest epsilon TF's fused kernels accept


def _channel_vector(value, name: str, dtype: dtypes.DType, channels: Optional[int],
                    like: Tensor) -> Tensor:
    t = as_tensor(value, dtype=None if isinstance(value, Tensor) else dtype, name=name,
                  like=like)
    if t.dtype is not dtype:
        raise TypeError(f"fused_batch_norm: '{name}' ({t.name}) must be {dtype.name}, got "
                        f"{t.dtype.name}")
    check_rank(t, 1, "FusedBatchNorm", name)
    size = t.shape.as_tuple()[0] if t.shape.ndims == 1 else None
    if size is not None and channels is not None and size != channels:
        raise ValueError(f"fused_batch_norm: '{name}' ({t.name}) must have {channels} "
                         f"entries (the channels of x), got shape {t.shape}")
    return t


@constructor("fused_batch_norm", "x", "scale", "offset", "mean", "variance", "epsilon",
             "data_format", "is_training", "exponential_avg_factor", single_op=False)
def fused_batch_norm(x, scale, offset, mean=None, variance=None, epsilon: float = 0.001,
                     data_format: str = "NHWC", is_training: bool = True,
                     name: Optional[str] = None, exponential_avg_factor: float = 1.0):
    """Batch normalisation of a 4-D ``x`` per channel; returns (y, mean, variance).

    Training normalises with the batch statistics and returns the batch mean and the
    unbiased batch variance (blended into ``mean``/``variance`` when
    ``exponential_avg_factor`` != 1); inference uses and returns ``mean``/``variance``.
    """
    if (not is_training or exponential_avg_factor != 1.0) and (mean is None or variance is None):
        raise ValueError("Both `mean` and `variance` must be a 1D tensor when `is_training` "
                         "is False or `exponential_avg_factor` != 1.0. Received: `mean` "
                         f"{mean!r} and `variance` {variance!r}")
    if data_format not in ("NHWC", "NCHW"):
        raise ValueError(f"fused_batch_norm: data_format must be 'NHWC' or 'NCHW', got "
                         f"{data_format!r}")
    with name_scope(name, "FusedBatchNorm", [x, scale, offset]):
        x = floating_tensor(x, "FusedBatchNorm", "x")
        check_rank(x, 4, "FusedBatchNorm", "x")
        channel_axis = 3 if data_format == "NHWC" else 1
        channels = x.shape.as_tuple()[channel_axis] if x.shape.ndims == 4 else None
        param_dtype = dtypes.float32 if x.dtype.size <= 2 else x.dtype
        params = {key: _channel_vector(value, key, param_dtype, channels, x)
                  for key, value in (("scale", scale), ("offset", offset), ("mean", mean),
                                     ("variance", variance)) if value is not None}
        broadcast = [1, 1, 1, -1] if data_format == "NHWC" else [1, -1, 1, 1]
        xu = math_ops.cast(x, param_dtype)
        if is_training:
            axes = [0, 1, 2] if data_format == "NHWC" else [0, 2, 3]
            batch_mean, batch_variance = moments(xu, axes)
        else:
            batch_mean, batch_variance = params["mean"], params["variance"]
        y = batch_normalization(xu, array.reshape(batch_mean, broadcast),
                                array.reshape(batch_variance, broadcast),
                                array.reshape(params["offset"], broadcast),
                                array.reshape(params["scale"], broadcast),
                                max(epsilon, _MIN_FUSED_EPSILON))
        y = math_ops.cast(y, x.dtype)
        if not is_training:
            return y, array.identity(batch_mean), array.identity(batch_variance)
        batch_variance = batch_variance * _bessel_correction(x, channel_axis, param_dtype)
        if exponential_avg_factor != 1.0:
            factor = scalar(exponential_avg_factor, batch_mean)
            keep = scalar(1.0 - exponential_avg_factor, batch_mean)
            batch_mean = keep * params["mean"] + factor * batch_mean
            batch_variance = keep * params["variance"] + factor * batch_variance
        return y, batch_mean, batch_variance


def _bessel_correction(x: Tensor, channel_axis: int, dtype: dtypes.DType) -> Tensor:
    """n / (n - 1) for the n values averaged per channel (1 when n == 1)."""
    count = math_ops.cast(array.size(x), dtype) / math_ops.cast(
        array.gather_dim(x, channel_axis), dtype)
    one = constant(1, dtype=dtype)
    return count / math_ops.maximum(count - one, one)


# -------------------------------------------------------------------------- dropout
def _check_rate(rate) -> None:
    if not 0 <= rate < 1:
        raise ValueError(f"`rate` must be a scalar tensor or a float in the range [0, 1). "
                         f"Received: rate={rate}")


def _noise_shape(x: Tensor, noise_shape):
    """``noise_shape`` with its None entries taken from ``x``'s static shape."""
    if noise_shape is None:
        return array.shape(x)
    if isinstance(noise_shape, Tensor) or None not in list(noise_shape):
        return noise_shape
    dims = x.shape.as_tuple()
    if dims is None or len(dims) != len(noise_shape):
        raise ValueError(f"noise_shape {noise_shape} has unknown entries that cannot be "
                         f"taken from x ({x.name}) of shape {x.shape}")
    return [d if n is None else n for n, d in zip(noise_shape, dims)]


@constructor("dropout", "x", "keep_prob", "noise_shape", "seed", "rate", single_op=False)
def dropout(x, keep_prob=None, noise_shape=None, seed: Optional[int] = None,
            name: Optional[str] = None, rate=None) -> Tensor:
    """Zeroes each element with probability ``rate`` (= 1 - keep_prob), scaling the rest
    by 1 / (1 - rate) so the expected value is unchanged."""
    if keep_prob is not None:
        if rate is not None:
            raise ValueError("Cannot specify both 'keep_prob' and 'rate'.")
        rate = 1 - keep_prob
    if rate is None:
        raise ValueError("`rate` must be provided. Received: rate=None")
    x = convert_to_tensor(x, name="x")
    if not x.dtype.is_floating:
        raise ValueError(f"`x.dtype` must be a floating point tensor as `x` will be scaled. "
                         f"Received: x_dtype={x.dtype!r}")
    if not isinstance(rate, Tensor):
        _check_rate(rate)
        if rate == 0:
            return x
    with name_scope(name, "dropout", [x]):
        # TF1's graph: x * scale, a uniform draw compared with the rate, and a select
        if isinstance(rate, Tensor):
            rate.shape.with_rank(0)  # a rate tensor is a scalar (TF's ValueError otherwise)
            scale = 1 / (1 - math_ops.cast(rate, x.dtype))
        else:
            scale = constant(1 / (1 - rate), dtype=x.dtype, name="Const")
        scaled = math_ops.multiply(x, scale)
        noise = random_uniform(_noise_shape(x, noise_shape), seed=seed, dtype=x.dtype)
        keep = math_ops.greater_equal(noise, math_ops.cast(rate, x.dtype)
                                      if isinstance(rate, Tensor) else rate)
        zero = constant(0, dtype=x.dtype, name="Const")
        result = math_ops.select_v2(keep, scaled, zero)
        result.set_shape(x.shape)  # a fed rate of unknown shape keeps x's shape
        return result
