"""Splitting and reassembling by index: ``dynamic_partition`` and ``dynamic_stitch``
(each other's gradient), ``unravel_index``, ``setdiff1d`` (``ListDiff``),
``parallel_stack`` (``ParallelConcat``), ``repeat`` and ``batch_gather``.
"""
from __future__ import annotations

import collections
from typing import Optional, Sequence

import numpy as np

from gradflow.framework import dtypes, errors
from gradflow.framework.constant import constant_value, convert_to_tensor
from gradflow.framework.graph import Tensor, name_scope
from gradflow.framework.indexed_slices import IndexedSlices
from gradflow.framework.registry import NotDifferentiable, RegisterGradient, define_op
from gradflow.framework.tensor_shape import TensorShape
from gradflow.ops import math as math_ops
from gradflow.ops.array.indexing import gather, sequence_mask, split
from gradflow.ops.array.shapes import expand_dims, size
from gradflow.ops.array.slicing import boolean_mask, tile
from gradflow.ops.common import apply_op, as_tensor, check_dtype_in, constructor, static_ints
from gradflow.ops.primitives import (broadcast_to, range as _range, reshape, shape,
                                     stack, zeros_like)

__all__ = ["dynamic_partition", "dynamic_stitch", "unravel_index", "setdiff1d",
           "parallel_stack", "repeat", "batch_gather", "sparse_mask"]

_INDEX = (dtypes.int32, dtypes.int64)


# ------------------------------------------------------------ DynamicPartition
def _infer_partition(inputs, attrs):
    data, partitions = inputs
    check_dtype_in(partitions, (dtypes.int32,), "DynamicPartition", "partitions")
    count = attrs["num_partitions"]
    if data.shape.ndims is not None and partitions.shape.ndims is not None:
        prefix = TensorShape(data.shape.as_list()[:partitions.shape.ndims])
        if not prefix.is_compatible_with(partitions.shape):
            raise ValueError(f"Dimensions must be equal for 'DynamicPartition': data shape "
                             f"{data.shape} must start with partitions shape "
                             f"{partitions.shape}.")
        rest = data.shape.as_list()[partitions.shape.ndims:]
        out = TensorShape([None] + rest)
    else:
        out = TensorShape(None)
    return [(data.dtype, out)] * count


def _partition_kernel(data, partitions, *, num_partitions):
    flat = partitions.reshape(-1)
    bad = np.flatnonzero((flat < 0) | (flat >= num_partitions))
    if bad.size:
        raise errors.InvalidArgumentError(
            None, None, f"partitions[{bad[0]}] = {flat[bad[0]]} is not in [0, "
            f"{num_partitions})")
    rows = data.reshape((flat.size,) + data.shape[partitions.ndim:])
    return tuple(np.ascontiguousarray(rows[flat == i]) for i in range(num_partitions))


define_op("DynamicPartition", infer=_infer_partition, kernel=_partition_kernel)


@RegisterGradient("DynamicPartition")
def _partition_grad(op, *grads):
    """Partition the positions the same way and stitch the gradients back there."""
    data, partitions = op.inputs
    positions = reshape(_range(size(partitions)), shape(partitions))
    parts = dynamic_partition(positions, partitions, op.get_attr("num_partitions"))
    pieces = [zeros_like(out) if g is None else g
              for g, out in zip(grads, op.outputs, strict=True)]
    return reshape(dynamic_stitch(parts, pieces), shape(data)), None


@constructor("DynamicPartition", "data", "partitions")
def dynamic_partition(data, partitions, num_partitions: int,
                      name: Optional[str] = None) -> list[Tensor]:
    """Splits ``data`` into ``num_partitions`` tensors by the partition of each row."""
    if isinstance(num_partitions, bool) or not isinstance(num_partitions, (int, np.integer)):
        raise TypeError(f"Expected int for argument 'num_partitions' not {num_partitions!r}.")
    if num_partitions < 1:
        raise ValueError(f"Value for attr 'num_partitions' of {num_partitions} must be at "
                         "least minimum 1")
    x = convert_to_tensor(data, name="data")
    p = as_tensor(partitions, name="partitions", like=x)
    result = apply_op("DynamicPartition", [x, p], name=name or "DynamicPartition",
                      num_partitions=int(num_partitions))
    return result if isinstance(result, list) else [result]


# --------------------------------------------------------------- DynamicStitch
def _infer_stitch(inputs, attrs):
    n = attrs["N"]
    indices, data = inputs[:n], inputs[n:]
    for t in indices:
        check_dtype_in(t, (dtypes.int32,), "DynamicStitch", "indices")
    dtype = data[0].dtype
    for t in data[1:]:
        if t.dtype is not dtype:
            raise TypeError(f"Input 'data' of 'DynamicStitch' Op has type {t.dtype.name} that "
                            f"does not match type {dtype.name} of the first data tensor.")
    rest = None
    for idx, d in zip(indices, data, strict=True):
        if idx.shape.ndims is None or d.shape.ndims is None:
            continue
        if not TensorShape(d.shape.as_list()[:idx.shape.ndims]).is_compatible_with(idx.shape):
            raise ValueError(f"Dimensions must be equal for 'DynamicStitch': data shape "
                             f"{d.shape} must start with indices shape {idx.shape}.")
        tail = TensorShape(d.shape.as_list()[idx.shape.ndims:])
        rest = tail if rest is None else rest.merge_with(tail)
    values = [static_ints(t) for t in indices]
    first = None if any(v is None for v in values) else \
        max([max(v) for v in values if v] + [-1]) + 1
    if rest is None or rest.ndims is None:
        return [(dtype, TensorShape(None))]
    return [(dtype, TensorShape([first] + rest.as_list()))]


def _stitch_kernel(*arrays, N):
    indices, data = arrays[:N], arrays[N:]
    count = max([int(i.max()) for i in indices if i.size] + [-1]) + 1
    rest = data[0].shape[indices[0].ndim:]
    out = np.zeros((count,) + rest, dtype=data[0].dtype)
    for idx, d in zip(indices, data, strict=True):  # later pieces overwrite, as in TF
        out[idx.reshape(-1)] = d.reshape((idx.size,) + rest)
    return out


define_op("DynamicStitch", infer=_infer_stitch, kernel=_stitch_kernel)


@RegisterGradient("DynamicStitch")
def _stitch_grad(op, grad):
    """Each data piece gets the gradient rows at its indices (TF's rule)."""
    n = op.get_attr("N")
    indices = op.inputs[:n]
    return [None] * n + [gather(grad, i) for i in indices]


@constructor("DynamicStitch", "indices", "data", single_op=False)
def dynamic_stitch(indices: Sequence, data: Sequence, name: Optional[str] = None) -> Tensor:
    """Interleaves the rows of ``data`` into one tensor at the positions ``indices``."""
    if len(indices) != len(data) or not indices:
        raise ValueError(f"dynamic_stitch: indices and data must be lists of the same "
                         f"non-zero length, got {len(indices)} and {len(data)}")
    idx = [convert_to_tensor(i) for i in indices]
    values = [convert_to_tensor(d) for d in data]
    return apply_op("DynamicStitch", idx + values, name=name or "DynamicStitch", N=len(idx))


# ------------------------------------------------------------- UnravelIndex
def _infer_unravel(inputs, attrs):
    indices, dims = inputs
    check_dtype_in(indices, _INDEX, "UnravelIndex", "indices")
    if dims.dtype is not indices.dtype:
        raise TypeError(f"Input 'dims' of 'UnravelIndex' Op has type {dims.dtype.name} that "
                        f"does not match type {indices.dtype.name} of argument 'indices'.")
    if dims.shape.ndims not in (None, 1):
        raise ValueError(f"Shape must be rank 1 but is rank {dims.shape.ndims} for "
                         f"'UnravelIndex' input 'dims'.")
    if indices.shape.ndims not in (None, 0, 1):
        raise ValueError(f"Shape must be at most rank 1 but is rank {indices.shape.ndims} "
                         f"for 'UnravelIndex' input 'indices'.")
    count = dims.shape.as_list()[0] if dims.shape.ndims == 1 else None
    if indices.shape.ndims == 0:
        return [(indices.dtype, TensorShape([count]))]
    if indices.shape.ndims == 1:
        return [(indices.dtype, TensorShape([count, indices.shape.as_list()[0]]))]
    return [(indices.dtype, TensorShape(None))]


def _unravel_kernel(indices, dims):
    total = int(np.prod(dims))
    flat = np.asarray(indices).reshape(-1)
    if flat.size and (flat.min() < 0 or flat.max() >= total):
        raise errors.InvalidArgumentError(None, None, "index is out of bound as with dims")
    out = np.stack(np.unravel_index(flat, tuple(int(d) for d in dims))) if flat.size else \
        np.zeros((len(dims), 0), dtype=indices.dtype)
    return out.reshape((len(dims),) + np.shape(indices)).astype(indices.dtype)


define_op("UnravelIndex", infer=_infer_unravel, kernel=_unravel_kernel)
NotDifferentiable("UnravelIndex")


@constructor("UnravelIndex", "indices", "dims")
def unravel_index(indices, dims, name: Optional[str] = None) -> Tensor:
    """The coordinates of flat ``indices`` in an array of shape ``dims`` (one row per
    dimension)."""
    i = convert_to_tensor(indices, name="indices")
    d = as_tensor(dims, name="dims", dtype=None if isinstance(dims, Tensor) else i.dtype,
                  like=i)
    return apply_op("UnravelIndex", [i, d], name=name or "UnravelIndex")


# ------------------------------------------------------------------ ListDiff
def _infer_list_diff(inputs, attrs):
    x, y = inputs
    if y.dtype is not x.dtype:
        raise TypeError(f"Input 'y' of 'ListDiff' Op has type {y.dtype.name} that does not "
                        f"match type {x.dtype.name} of argument 'x'.")
    for t, arg in ((x, "x"), (y, "y")):
        if t.shape.ndims not in (None, 1):
            raise ValueError(f"Shape must be rank 1 but is rank {t.shape.ndims} for "
                             f"'ListDiff' input '{arg}'.")
    return [(x.dtype, TensorShape([None])), (attrs["out_idx"], TensorShape([None]))]


def _list_diff_kernel(x, y, *, out_idx):
    keep = np.flatnonzero(~np.isin(x, y))
    return x[keep], keep.astype(out_idx.as_numpy_dtype)


define_op("ListDiff", infer=_infer_list_diff, kernel=_list_diff_kernel)
NotDifferentiable("ListDiff")


@constructor("ListDiff", "x", "y")
def setdiff1d(x, y, index_dtype=dtypes.int32, name: Optional[str] = None) -> tuple:
    """The values of 1-D ``x`` not in ``y`` (order and repeats kept) and their positions."""
    index_type = dtypes.as_dtype(index_dtype)
    if index_type not in _INDEX:
        raise TypeError(f"Value passed to parameter 'out_idx' has DataType {index_type.name} "
                        "not in list of allowed values: int32, int64")
    a = convert_to_tensor(x, name="x")
    b = as_tensor(y, name="y", dtype=None if isinstance(y, Tensor) else a.dtype, like=a)
    out, idx = apply_op("ListDiff", [a, b], name=name or "ListDiff", out_idx=index_type)
    return _ListDiffResult(out, idx)


# ``(out, idx)``, also by name, as TF's result.
_ListDiffResult = collections.namedtuple("ListDiff", ["out", "idx"])


# ------------------------------------------------------------ ParallelConcat
def _infer_parallel_concat(inputs, attrs):
    out = attrs["shape"]
    for t in inputs:
        if t.dtype is not inputs[0].dtype:
            raise TypeError("parallel_stack: all values must have the same dtype, got "
                            f"{inputs[0].dtype.name} and {t.dtype.name}")
    return [(inputs[0].dtype, out)]


define_op("ParallelConcat", infer=_infer_parallel_concat,
          kernel=lambda *values, N, shape: np.concatenate(values, axis=0))


@RegisterGradient("ParallelConcat")
def _parallel_concat_grad(op, grad):
    """Each input gets its row of the output gradient."""
    return split(grad, op.get_attr("N"), axis=0)


@constructor("parallel_stack", "values", single_op=False)
def parallel_stack(values: Sequence, name: str = "parallel_stack") -> Tensor:
    """``stack(values)`` along a new first axis, for values of one fully known shape."""
    with name_scope(name, "parallel_stack", list(values)):
        tensors = [convert_to_tensor(v) for v in values]
        if not tensors:
            raise ValueError("parallel_stack: values must not be empty")
        each = tensors[0].shape
        for t in tensors[1:]:
            each = each.merge_with(t.shape)
        if not each.is_fully_defined():
            raise ValueError(f"Cannot infer the shape of the output: the values' shape {each} "
                             "must be fully defined")
        rows = [expand_dims(t, 0) for t in tensors]
        return apply_op("ParallelConcat", rows, name="ParallelConcat", N=len(rows),
                        shape=TensorShape([len(rows)] + each.as_list()))


# -------------------------------------------------------------- repeat, batch_gather
@constructor("Repeat", "input", "repeats", single_op=False)
def repeat(input, repeats, axis: Optional[int] = None,
           name: Optional[str] = None) -> Tensor:
    """Each element (``axis`` None: of the flattened input) or slice along ``axis``
    repeated ``repeats`` times (one count, or one per slice)."""
    with name_scope(name, "Repeat", [input, repeats]):
        x = convert_to_tensor(input, name="input")
        counts = math_ops.cast(convert_to_tensor(repeats, name="repeats"), dtypes.int32)
        if axis is None:
            x = reshape(x, [-1])
            axis = 0
        if counts.shape.ndims not in (None, 0, 1):
            raise ValueError(f"`repeats` must be a scalar or a 1-D tensor, got shape "
                             f"{counts.shape}")
        slices = shape(x)[axis]
        counts = broadcast_to(counts, [slices])
        most = math_ops.maximum(math_ops.reduce_max(counts), 0)
        mask = sequence_mask(counts, most)
        rows = tile(expand_dims(_range(slices), 1), stack([1, most]))
        result = gather(x, boolean_mask(rows, mask), axis=axis)
        _set_repeat_shape(result, x, repeats, axis)
        return result


def _set_repeat_shape(result: Tensor, x: Tensor, repeats, axis: int) -> None:
    """The static shape TF's ``repeat`` gives: known along ``axis`` when the counts are,
    except for per-slice counts along axis 0 (TF's boolean-mask route leaves it open)."""
    counts = constant_value(repeats)
    dims = x.shape.as_list() if x.shape.ndims is not None else None
    if counts is None or dims is None or dims[axis] is None:
        return
    counts = np.asarray(counts)
    if counts.ndim and axis % len(dims) == 0:
        return
    dims[axis] = int(np.broadcast_to(counts, (dims[axis],)).sum())
    result.set_shape(dims)


@constructor("BatchGather", "params", "indices", single_op=False)
def batch_gather(params, indices, name: Optional[str] = None) -> Tensor:
    """Per batch row, ``params[b]`` gathered at ``indices[b]`` (the leading dimensions of
    ``indices`` but its last are batch dimensions)."""
    with name_scope(name, "BatchGather", [params, indices]):
        p = convert_to_tensor(params, name="params")
        i = as_tensor(indices, name="indices", like=p)
        if i.shape.ndims is None:
            raise ValueError("batch_gather does not allow indices with unknown shape.")
        return gather(p, i, batch_dims=i.shape.ndims - 1, axis=i.shape.ndims - 1)


def sparse_mask(a: IndexedSlices, mask_indices, name: Optional[str] = None) -> IndexedSlices:
    """The slices of ``a`` whose indices are not in ``mask_indices``."""
    if not isinstance(a, IndexedSlices):
        raise TypeError(f"sparse_mask: a must be IndexedSlices, got {type(a).__name__}")
    with name_scope(name, "sparse_mask", [a.values, a.indices, mask_indices]) as scope:
        mask = convert_to_tensor(mask_indices, name="mask_indices")
        kept, positions = setdiff1d(a.indices, mask)
        values = gather(a.values, positions, name=scope)
        return IndexedSlices(values, kept, a.dense_shape)
