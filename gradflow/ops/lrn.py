"""Local response normalization (``tf.nn.lrn``, ``local_response_normalization``): the
``LRN`` op of AlexNet and the CIFAR-10 tutorial, and its gradient op ``LRNGrad``.

Over the last (depth) axis: ``out[..., d] = x[..., d] / (bias + alpha * s[..., d]) **
beta`` with ``s`` the sum of ``x ** 2`` over the depths ``d - depth_radius .. d +
depth_radius``. The gradient of ``out_i = x_i * n_i ** -beta`` is
``g_j * n_j ** -beta - 2 alpha beta x_j * sum over i near j of g_i x_i n_i ** (-beta - 1)``.
Computed in float64 and returned in the input's float type.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from gradflow.framework import dtypes
from gradflow.framework.constant import convert_to_tensor
from gradflow.framework.registry import NotDifferentiable, RegisterGradient, define_op
from gradflow.ops.common import graph_for

__all__ = ["lrn", "local_response_normalization"]

_LRN_TYPES = (dtypes.float16, dtypes.bfloat16, dtypes.float32)


def _window_sum(values: np.ndarray, radius: int) -> np.ndarray:
    """Sums of ``values`` over depth windows ``d - radius .. d + radius`` (clipped)."""
    depth = values.shape[-1]
    padded = np.concatenate([np.zeros(values.shape[:-1] + (1,)), np.cumsum(values, axis=-1)],
                            axis=-1)
    upper = np.minimum(np.arange(depth) + radius + 1, depth)
    lower = np.maximum(np.arange(depth) - radius, 0)
    return padded[..., upper] - padded[..., lower]


def _norm(x: np.ndarray, depth_radius: int, bias: float, alpha: float) -> np.ndarray:
    return bias + alpha * _window_sum(np.square(x), depth_radius)


def _infer_lrn(inputs, attrs):
    shape = inputs[0].shape
    if shape.ndims is not None and shape.ndims != 4:
        raise ValueError(f"Shape must be rank 4 but is rank {shape.ndims} for 'LRN' with "
                         f"input shapes: {shape}.")
    return [(inputs[0].dtype, shape)]


def _lrn_kernel(x, *, depth_radius: int, bias: float, alpha: float, beta: float, **_):
    x64 = np.asarray(x, np.float64)
    return (x64 * _norm(x64, depth_radius, bias, alpha) ** -beta).astype(np.asarray(x).dtype)


def _lrn_grad_kernel(grads, input_image, output_image, *, depth_radius: int, bias: float,
                     alpha: float, beta: float, **_):
    g = np.asarray(grads, np.float64)
    x = np.asarray(input_image, np.float64)
    norm = _norm(x, depth_radius, bias, alpha)
    spread = _window_sum(g * x * norm ** (-beta - 1.0), depth_radius)
    result = g * norm ** -beta - 2.0 * alpha * beta * x * spread
    return result.astype(np.asarray(grads).dtype)


define_op("LRN", infer=_infer_lrn, kernel=_lrn_kernel)
define_op("LRNGrad", infer=lambda inputs, attrs: [(inputs[1].dtype, inputs[1].shape)],
          kernel=_lrn_grad_kernel)
NotDifferentiable("LRNGrad")  # LRN has first-order gradients only (TF: LookupError)


def _attrs(op) -> dict:
    return {key: op.get_attr(key) for key in ("depth_radius", "bias", "alpha", "beta")}


@RegisterGradient("LRN")
def _lrn_grad(op, grad):
    graph = graph_for([grad, op.inputs[0]])
    attrs = dict(_attrs(op), T=op.inputs[0].dtype)
    return graph.create_op("LRNGrad", [grad, op.inputs[0], op.outputs[0]], attrs,
                           name="LRNGrad").outputs[0]


def lrn(input, depth_radius: int = 5, bias: float = 1.0, alpha: float = 1.0,
        beta: float = 0.5, name: Optional[str] = None):
    """Each value divided by ``(bias + alpha * sum of squares of its depth neighbours)
    ** beta`` (the neighbours within ``depth_radius`` along the last axis)."""
    graph = graph_for([input] if hasattr(input, "graph") else [])
    with graph.as_default(), graph.atomic(), graph.name_scope(name or "LRN") as scope:
        value = convert_to_tensor(input, name="input")
        if value.dtype not in _LRN_TYPES:
            raise TypeError(f"Value passed to parameter 'input' has DataType "
                            f"{value.dtype.name} not in list of allowed values: half, "
                            "bfloat16, float32")
        return graph.create_op("LRN", [value], {
            "T": value.dtype, "depth_radius": int(depth_radius), "bias": float(bias),
            "alpha": float(alpha), "beta": float(beta)}, scope).outputs[0]


local_response_normalization = lrn
