"""``tf.nn`` entry points that pick an existing op by rank or spell an older name:
``max_pool_v2``, ``avg_pool_v2``, ``conv_transpose``, ``batch_norm_with_global_normalization``,
``compute_average_loss``, ``scale_regularization_loss`` and ``with_space_to_batch``.
"""
from __future__ import annotations

from typing import Callable, Optional

import numpy as np

from gradflow.framework import dtypes
from gradflow.framework.constant import convert_to_tensor
from gradflow.framework.graph import Tensor
from gradflow.ops import array
from gradflow.ops import math as math_ops
from gradflow.ops.array.blocks import batch_to_space_nd, space_to_batch_nd
from gradflow.ops.logging_ops import assert_integer, assert_non_negative
from gradflow.ops.nn.convolution import conv2d_transpose
from gradflow.ops.nn.convolution_3d import conv3d_transpose
from gradflow.ops.nn.convolution_more import conv1d_transpose
from gradflow.ops.nn.normalization import batch_normalization
from gradflow.ops.nn.pooling import (avg_pool1d, avg_pool2d, avg_pool3d, max_pool1d,
                                     max_pool2d, max_pool3d)

__all__ = ["max_pool_v2", "avg_pool_v2", "conv_transpose",
           "batch_norm_with_global_normalization", "compute_average_loss",
           "scale_regularization_loss", "with_space_to_batch"]


def _pool_by_rank(pools: dict, input, ksize, strides, padding,
                  data_format: Optional[str], name: Optional[str]) -> Tensor:
    x = convert_to_tensor(input, name="input")
    rank = x.shape.ndims
    if rank is None and data_format is not None:
        rank = len(data_format)
    if rank not in pools:
        raise ValueError(f"`input.shape.rank` must be 3, 4 or 5. Received: "
                         f"input.shape={x.shape} of rank {rank}")
    pool, default_format = pools[rank]
    return pool(x, ksize, strides, padding, data_format=data_format or default_format,
                name=name)


def max_pool_v2(input, ksize, strides, padding: str,
                data_format: Optional[str] = None, name: Optional[str] = None) -> Tensor:
    """Max pooling of a 3-, 4- or 5-D input (1-, 2- or 3-D windows)."""
    return _pool_by_rank({3: (max_pool1d, "NWC"), 4: (max_pool2d, "NHWC"),
                          5: (max_pool3d, "NDHWC")}, input, ksize, strides, padding,
                         data_format, name)


def avg_pool_v2(input, ksize, strides, padding: str,
                data_format: Optional[str] = None, name: Optional[str] = None) -> Tensor:
    """Average pooling of a 3-, 4- or 5-D input (1-, 2- or 3-D windows)."""
    return _pool_by_rank({3: (avg_pool1d, "NWC"), 4: (avg_pool2d, "NHWC"),
                          5: (avg_pool3d, "NDHWC")}, input, ksize, strides, padding,
                         data_format, name)


def conv_transpose(input, filters, output_shape, strides, padding: str = "SAME",
                   data_format: Optional[str] = None, dilations=None,
                   name: Optional[str] = None) -> Tensor:
    """The transposed convolution of the rank ``len(output_shape)`` (1-, 2- or 3-D)."""
    if isinstance(output_shape, Tensor):
        rank = output_shape.shape.as_list()[0] if output_shape.shape.ndims == 1 else None
    else:
        rank = len(output_shape)
    builds: dict[int, tuple[Callable, str]] = {3: (conv1d_transpose, "NWC"),
                                               4: (conv2d_transpose, "NHWC"),
                                               5: (conv3d_transpose, "NDHWC")}
    if rank not in builds:
        raise ValueError(f"`output_shape` must be of length 3, 4 or 5. Received: "
                         f"output_shape={output_shape} of length {rank}.")
    build, default_format = builds[rank]
    return build(input, filters, output_shape, strides, padding=padding,
                 data_format=data_format or default_format, dilations=dilations,
                 name=name or "conv_transpose")


def batch_norm_with_global_normalization(t=None, m=None, v=None, beta=None, gamma=None,
                                         variance_epsilon=None,
                                         scale_after_normalization=None,
                                         name: Optional[str] = None, input=None,
                                         mean=None, variance=None) -> Tensor:
    """TF1's older batch normalization: ``batch_normalization`` with ``gamma`` applied
    only when ``scale_after_normalization``."""
    t = t if t is not None else input
    m = m if m is not None else mean
    v = v if v is not None else variance
    for value, arg in ((t, "t"), (m, "m"), (v, "v"), (beta, "beta"), (gamma, "gamma"),
                       (variance_epsilon, "variance_epsilon"),
                       (scale_after_normalization, "scale_after_normalization")):
        if value is None:
            raise ValueError(f"batch_norm_with_global_normalization: {arg} must be given")
    return batch_normalization(t, m, v, beta, gamma if scale_after_normalization else None,
                               variance_epsilon, name)


def compute_average_loss(per_example_loss, sample_weight=None, global_batch_size=None,
                         name: Optional[str] = None) -> Tensor:
    """The per-example losses (times ``sample_weight``) summed and divided by the global
    batch size (by default the first dimension: one replica, as gradflow runs)."""
    losses = convert_to_tensor(per_example_loss)
    if not losses.dtype.is_floating:
        raise TypeError(f"per_example_loss must be floating, got {losses.dtype.name}")
    if sample_weight is not None:
        losses = losses * math_ops.cast(convert_to_tensor(sample_weight), losses.dtype)
    if global_batch_size is None:
        global_batch_size = array.shape(losses, out_type=dtypes.int64)[0]
    else:
        size = convert_to_tensor(global_batch_size)
        assert_integer(size, message="global_batch_size must be an integer.")
        assert_non_negative(size, message="global_batch_size must be non-negative.")
        global_batch_size = size
    total = math_ops.reduce_sum(losses)
    return math_ops.div_no_nan(total, math_ops.cast(global_batch_size, losses.dtype),
                               name=name)


def scale_regularization_loss(regularization_loss, name: Optional[str] = None) -> Tensor:
    """The summed regularization loss divided by the number of replicas (one)."""
    total = math_ops.reduce_sum(convert_to_tensor(regularization_loss))
    return math_ops.truediv(total, math_ops.cast(1, total.dtype), name=name)


def with_space_to_batch(input, dilation_rate, padding: str, op: Callable,
                        filter_shape=None, spatial_dims=None,
                        data_format: Optional[str] = None) -> Tensor:
    """``op(converted_input, num_spatial_dims, padding)`` run at ``dilation_rate`` by
    moving the dilation into the batch (SpaceToBatchND) and back (BatchToSpaceND)."""
    x = convert_to_tensor(input, name="input")
    rates = [int(r) for r in np.reshape(dilation_rate, -1)]
    count = len(rates)
    if spatial_dims is not None and list(spatial_dims) != list(range(1, count + 1)):
        raise ValueError("with_space_to_batch: spatial_dims other than 1..N (channels-last) "
                         "are not supported")
    if data_format is not None and data_format.startswith("NC"):
        raise ValueError("with_space_to_batch: channels-first data_format is not supported")
    if padding not in ("SAME", "VALID"):
        raise ValueError(f"padding must be 'SAME' or 'VALID', got {padding!r}")
    if all(r == 1 for r in rates):
        return op(x, count, padding)
    dims = x.shape.as_tuple()
    if dims is None or None in dims[1:1 + count]:
        raise ValueError("with_space_to_batch needs the spatial sizes of input known")
    if padding == "SAME":
        if filter_shape is None:
            raise ValueError("filter_shape must be specified for SAME padding")
        sizes = [int(k) for k in np.reshape(filter_shape, -1)]
    else:
        sizes = [1] * count
    paddings, crops = [], []
    for size, k, rate in zip(dims[1:1 + count], sizes, rates, strict=True):
        total = (k - 1) * rate if padding == "SAME" else 0
        before, after = total // 2, total - total // 2
        extra = (-(size + before + after)) % rate
        paddings.append([before, after + extra])
        crops.append([0, extra])
    block = np.asarray(rates, np.int32)
    batched = space_to_batch_nd(x, block, np.asarray(paddings, np.int32))
    result = op(batched, count, "VALID")
    return batch_to_space_nd(result, block, np.asarray(crops, np.int32))
