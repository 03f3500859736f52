"""Functional N-d scatters into a tensor: ``tensor_scatter_nd_update``, ``_add``,
``_sub``, ``_max`` and ``_min`` (TF1 also spells the first three
``tensor_scatter_update``/``_add``/``_sub``).

Each op copies ``tensor`` and combines ``updates`` into it at the N-d ``indices``
(repeated indices combine in order); the gradient rules are TF's.
"""
from __future__ import annotations

from typing import Callable, Optional

import numpy as np

from gradflow.framework import dtypes, errors
from gradflow.framework.constant import convert_to_tensor
from gradflow.framework.graph import Tensor
from gradflow.framework.registry import RegisterGradient, define_op, gradient_needed
from gradflow.framework.tensor_shape import TensorShape
from gradflow.ops import math as math_ops
from gradflow.ops.array.indexing import gather_nd
from gradflow.ops.common import apply_op, as_tensor, check_dtype_in, constructor
from gradflow.ops.primitives import zeros_like

__all__ = ["tensor_scatter_nd_update", "tensor_scatter_nd_add", "tensor_scatter_nd_sub",
           "tensor_scatter_nd_max", "tensor_scatter_nd_min", "tensor_scatter_update",
           "tensor_scatter_add", "tensor_scatter_sub"]

# How each op combines the current element with an update (None: replaces it).
_COMBINE: dict[str, Optional[Callable]] = {
    "TensorScatterUpdate": None, "TensorScatterAdd": np.add, "TensorScatterSub": np.subtract,
    "TensorScatterMax": np.maximum, "TensorScatterMin": np.minimum}


def _dims(shape) -> str:
    return "[" + ",".join(str(d) for d in shape) + "]"


def _scatter_kernel(op_type: str):
    combine = _COMBINE[op_type]

    def kernel(tensor, indices, updates):
        out = np.array(tensor, copy=True)
        depth = indices.shape[-1]
        points = indices.reshape(-1, depth)
        values = updates.reshape((points.shape[0],) + out.shape[depth:])
        for i, point in enumerate(points):
            if any(not 0 <= p < n for p, n in zip(point, out.shape, strict=False)):
                raise errors.InvalidArgumentError(
                    None, None, f"indices[{i}] = [{', '.join(str(int(p)) for p in point)}] "
                    f"does not index into shape {_dims(out.shape)}")
        if combine is None:
            for point, value in zip(points, values, strict=True):  # the last repeat wins
                out[tuple(point)] = value
        else:
            combine.at(out, tuple(points.T), values)
        return out
    return kernel


def _infer_scatter(op_type: str):
    def infer(inputs, attrs):
        tensor, indices, updates = inputs
        check_dtype_in(indices, (dtypes.int32, dtypes.int64), op_type, "indices")
        if updates.dtype is not tensor.dtype:
            raise TypeError(f"Input 'updates' of '{op_type}' Op has type {updates.dtype.name} "
                            f"that does not match type {tensor.dtype.name} of argument "
                            "'tensor'.")
        dims, tensor_dims = indices.shape.as_tuple(), tensor.shape.as_tuple()
        if dims is not None and not dims:
            raise ValueError(f"Indices shape must have rank at least one. Shape: [] for "
                             f"'{op_type}'.")
        if dims is not None and tensor_dims is not None and dims[-1] is not None:
            if dims[-1] > len(tensor_dims):
                raise ValueError(f"Index innermost dimension length must be <= tensor rank; "
                                 f"saw: {dims[-1]} vs. {len(tensor_dims)} for '{op_type}'.")
            expected = TensorShape(dims[:-1] + tensor_dims[dims[-1]:])
            if not expected.is_compatible_with(updates.shape):
                raise ValueError(f"Dimensions [{len(dims) - 1},{updates.shape.ndims}) of "
                                 f"updates[shape={updates.shape}] = {updates.shape} must "
                                 f"match dimensions of indices and tensor: {expected} for "
                                 f"'{op_type}'.")
        return [(tensor.dtype, tensor.shape)]
    return infer


for _op_type in _COMBINE:
    define_op(_op_type, infer=_infer_scatter(_op_type), kernel=_scatter_kernel(_op_type))


@RegisterGradient("TensorScatterUpdate")
def _update_grad(op, grad):
    """Replaced elements pass no gradient to ``tensor``; ``updates`` read theirs."""
    _, indices, updates = op.inputs
    return (tensor_scatter_nd_update(grad, indices, zeros_like(updates))
            if gradient_needed(op.inputs[0]) else None, None,
            gather_nd(grad, indices) if gradient_needed(updates) else None)


@RegisterGradient("TensorScatterAdd")
def _add_grad(op, grad):
    _, indices, updates = op.inputs
    return grad, None, gather_nd(grad, indices) if gradient_needed(updates) else None


@RegisterGradient("TensorScatterSub")
def _sub_grad(op, grad):
    _, indices, updates = op.inputs
    return (grad, None,
            math_ops.negative(gather_nd(grad, indices)) if gradient_needed(updates) else None)


def _min_or_max_grad(op, grad):
    """The gradient of each output element is shared equally by the inputs (the
    original element and the updates) equal to it, as in TF."""
    tensor, indices, updates = op.inputs
    result = op.outputs[0]
    tensor_hits = math_ops.cast(math_ops.equal(tensor, result), grad.dtype)
    update_hits = math_ops.cast(math_ops.equal(updates, gather_nd(result, indices)),
                                grad.dtype)
    counts = tensor_scatter_nd_add(tensor_hits, indices, update_hits)
    share = math_ops.divide(grad, counts)
    return tensor_hits * share, None, update_hits * gather_nd(share, indices)


RegisterGradient("TensorScatterMax")(_min_or_max_grad)
RegisterGradient("TensorScatterMin")(_min_or_max_grad)


def _scatter(op_type: str, tensor, indices, updates, name: Optional[str]) -> Tensor:
    t = convert_to_tensor(tensor, name="tensor")
    i = as_tensor(indices, name="indices", like=t)
    u = as_tensor(updates, name="updates", dtype=None if isinstance(updates, Tensor)
                  else t.dtype, like=t)
    return apply_op(op_type, [t, i, u], name=name or op_type)


@constructor("TensorScatterUpdate", "tensor", "indices", "updates")
def tensor_scatter_nd_update(tensor, indices, updates, name: Optional[str] = None) -> Tensor:
    """``tensor`` with the elements or slices at N-d ``indices`` replaced by ``updates``."""
    return _scatter("TensorScatterUpdate", tensor, indices, updates, name)


@constructor("TensorScatterAdd", "tensor", "indices", "updates")
def tensor_scatter_nd_add(tensor, indices, updates, name: Optional[str] = None) -> Tensor:
    """``tensor`` with ``updates`` added at N-d ``indices`` (repeats add up)."""
    return _scatter("TensorScatterAdd", tensor, indices, updates, name)


@constructor("TensorScatterSub", "tensor", "indices", "updates")
def tensor_scatter_nd_sub(tensor, indices, updates, name: Optional[str] = None) -> Tensor:
    """``tensor`` with ``updates`` subtracted at N-d ``indices``."""
    return _scatter("TensorScatterSub", tensor, indices, updates, name)


@constructor("TensorScatterMax", "tensor", "indices", "updates")
def tensor_scatter_nd_max(tensor, indices, updates, name: Optional[str] = None) -> Tensor:
    """``tensor`` with each element at N-d ``indices`` the maximum of it and ``updates``."""
    return _scatter("TensorScatterMax", tensor, indices, updates, name)


@constructor("TensorScatterMin", "tensor", "indices", "updates")
def tensor_scatter_nd_min(tensor, indices, updates, name: Optional[str] = None) -> Tensor:
    """``tensor`` with each element at N-d ``indices`` the minimum of it and ``updates``."""
    return _scatter("TensorScatterMin", tensor, indices, updates, name)


tensor_scatter_update = tensor_scatter_nd_update
tensor_scatter_add = tensor_scatter_nd_add
tensor_scatter_sub = tensor_scatter_nd_sub
