"""Moments in pieces and the Poisson loss: ``sufficient_statistics``,
``normalize_moments``, ``weighted_moments`` and ``log_poisson_loss``, composed from
public ops with TF1's scopes and op names (so their gradients come from those ops)."""
from __future__ import annotations

import math
from typing import Optional

import numpy as np

from gradflow.framework import dtypes
from gradflow.framework.constant import convert_to_tensor
from gradflow.framework.graph import Tensor, name_scope
from gradflow.ops import array
from gradflow.ops import math as math_ops
from gradflow.ops.common import constructor
from gradflow.ops.nn.helpers import floating_tensor

__all__ = ["sufficient_statistics", "normalize_moments", "weighted_moments",
           "log_poisson_loss"]


def _keep(keep_dims, keepdims) -> bool:
    if keep_dims is not None and keepdims is not None:
        raise ValueError("Cannot specify both 'keep_dims' and 'keepdims'.")
    return bool(keepdims if keepdims is not None else keep_dims)


def _axes_list(axes) -> list[int]:
    if isinstance(axes, Tensor):
        raise TypeError("axes must be a Python list of ints (the reduced axes are needed "
                        f"while building), got the tensor {axes.name}")
    return [int(axes)] if np.ndim(axes) == 0 else [int(a) for a in axes]


@constructor("sufficient_statistics", "x", "axes", "shift", single_op=False)
def sufficient_statistics(x, axes, shift=None, keep_dims=None, name: Optional[str] = None,
                          keepdims=None) -> tuple:
    """``(count, sum, sum of squares, shift)`` of ``x`` over ``axes`` (the sums of
    ``x - shift`` when ``shift`` is given): the pieces ``normalize_moments`` combines."""
    keep = _keep(keep_dims, keepdims)
    axes = _axes_list(axes)
    with name_scope(name, "sufficient_statistics", [x, shift]):
        x = convert_to_tensor(x, name="x")
        dims = x.shape.as_tuple()
        if dims is not None and all(dims[a] is not None for a in axes):
            counts = convert_to_tensor(np.prod([dims[a] for a in axes], dtype=np.float64),
                                       dtype=x.dtype, name="Const")
        else:
            sizes = array.gather(array.shape(x), axes)
            counts = math_ops.cast(math_ops.reduce_prod(sizes), x.dtype, name="count")
        if shift is not None:
            shift = convert_to_tensor(shift, name="shift", dtype=x.dtype)
            m_ss = math_ops.subtract(x, shift)
            v_ss = math_ops.squared_difference(x, shift)
        else:
            m_ss, v_ss = x, math_ops.square(x)
        m_ss = math_ops.reduce_sum(m_ss, axes, keepdims=keep, name="mean_ss")
        v_ss = math_ops.reduce_sum(v_ss, axes, keepdims=keep, name="var_ss")
        return counts, m_ss, v_ss, shift


@constructor("normalize", "counts", "mean_ss", "variance_ss", "shift", single_op=False)
def normalize_moments(counts, mean_ss, variance_ss, shift,
                      name: Optional[str] = None) -> tuple[Tensor, Tensor]:
    """Mean and variance from ``sufficient_statistics``' count and sums."""
    with name_scope(name, "normalize", [counts, mean_ss, variance_ss, shift]):
        divisor = math_ops.reciprocal(counts, name="divisor")
        if shift is not None:
            shifted_mean = math_ops.multiply(mean_ss, divisor, name="shifted_mean")
            mean = math_ops.add(shifted_mean, shift, name="mean")
        else:
            shifted_mean = math_ops.multiply(mean_ss, divisor, name="mean")
            mean = shifted_mean
        variance = math_ops.subtract(math_ops.multiply(variance_ss, divisor),
                                     math_ops.square(shifted_mean), name="variance")
        return mean, variance


@constructor("weighted_moments", "x", "axes", "frequency_weights", single_op=False)
def weighted_moments(x, axes, frequency_weights, name: Optional[str] = None, keep_dims=None,
                     keepdims=None) -> tuple[Tensor, Tensor]:
    """The mean and variance of ``x`` over ``axes``, each element counted
    ``frequency_weights`` times (broadcast against ``x``); 0 where the weights sum to 0."""
    keep = _keep(keep_dims, keepdims)
    axes = _axes_list(axes)
    with name_scope(name, "weighted_moments", [x, frequency_weights, axes]):
        x = floating_tensor(x, "weighted_moments", "x")
        weights = convert_to_tensor(frequency_weights, name="frequency_weights")
        wide = x.dtype is dtypes.float16  # summed in float32, as TF does
        if wide:
            x = math_ops.cast(x, dtypes.float32)
        if weights.dtype is not x.dtype:
            weights = math_ops.cast(weights, x.dtype)
        weighted_input_sum = math_ops.reduce_sum(weights * x, axes, keepdims=True,
                                                 name="weighted_input_sum")
        broadcast_weights = weights + array.zeros_like(x)
        sum_of_weights = math_ops.reduce_sum(broadcast_weights, axes, keepdims=True,
                                             name="sum_of_weights")
        mean = math_ops.div_no_nan(weighted_input_sum, sum_of_weights)
        distances = weights * math_ops.squared_difference(x, mean)
        weighted_distsq = math_ops.reduce_sum(distances, axes, keepdims=True,
                                              name="weighted_distsq")
        variance = math_ops.div_no_nan(weighted_distsq, sum_of_weights)
        if not keep:
            mean = array.squeeze(mean, axes)
            variance = array.squeeze(variance, axes)
        if wide:
            mean = math_ops.cast(mean, dtypes.float16)
            variance = math_ops.cast(variance, dtypes.float16)
        return mean, variance


@constructor("log_poisson_loss", "targets", "log_input", single_op=False)
def log_poisson_loss(targets, log_input, compute_full_loss: bool = False,
                     name: Optional[str] = None) -> Tensor:
    """The negative log-likelihood of ``targets`` under Poisson rates ``exp(log_input)``:
    ``exp(log_input) - log_input * targets``, plus Stirling's approximation of
    ``log(targets!)`` (for targets above 1) when ``compute_full_loss``."""
    with name_scope(name, "log_poisson_loss", [log_input, targets]):
        log_input = convert_to_tensor(log_input, name="log_input")
        targets = convert_to_tensor(targets, name="targets")
        if not log_input.shape.is_compatible_with(targets.shape):
            raise ValueError(f"`log_input` and `targets` must have the same shape, received "
                             f"({log_input.shape.as_tuple()} vs {targets.shape.as_tuple()}).")
        result = math_ops.exp(log_input) - log_input * targets
        if compute_full_loss:
            point_five = convert_to_tensor(0.5, dtype=targets.dtype)
            two_pi = convert_to_tensor(2 * math.pi, dtype=targets.dtype)
            stirling = targets * math_ops.log(targets) - targets + \
                point_five * math_ops.log(two_pi * targets)
            zeros = array.zeros_like(targets)
            ones = array.ones_like(targets)
            small = math_ops.logical_and(math_ops.greater_equal(targets, zeros),
                                         math_ops.less_equal(targets, ones))
            result += math_ops.select(small, zeros, stirling)
        return result
