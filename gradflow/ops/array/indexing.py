"""Joining, splitting and indexing: concat, split, stack, gather and scatter, segment sums,
one-hot, masks and unique.
"""
from __future__ import annotations

import collections
import warnings
from typing import Optional

import numpy as np

from gradflow.framework import dtypes, errors
from gradflow.framework.constant import (constant, constant_value, convert_to_tensor,
                                         register_tensor_conversion_function)
from gradflow.framework.graph import Tensor
from gradflow.framework.indexed_slices import LARGE_SPARSE_NUM_ELEMENTS, IndexedSlices
from gradflow.framework.registry import NotDifferentiable, RegisterGradient, define_op
from gradflow.framework.tensor_shape import TensorShape
from gradflow.ops.array.shapes import size, squeeze, transpose
from gradflow.ops.array.sources import identity, ones
from gradflow.ops.common import (NUMERIC, apply_op, as_tensor, check_dtype_in,
                                 check_python_operand, constructor, graph_for, static_ints)
from gradflow.ops.primitives import (INDEX_TYPES, add, broadcast_to, cast, check_index_dtype,
                                     check_rank, fill, floordiv, greater_equal, int_vector, maximum,
                                     multiply, normalized_axis, range as range_op, rank,
                                     register_foldable, reshape, select_v2, shape, shape_of_input,
                                     shape_tensor, stack, static_shape_of, zeros_like)


def _transposed(x: Tensor, perm: list) -> Tensor:
    """``transpose(x, perm)``, or ``x`` itself when ``perm`` is the identity."""
    return x if perm == list(range(len(perm))) else transpose(x, perm)


def _num_elements(dims: Tensor) -> Tensor:
    """How many elements a tensor of shape ``dims`` (1-D int tensor) has, as a scalar."""
    known = static_ints(dims)
    if known is not None:
        return constant(int(np.prod(known, dtype=np.int64)), dtype=dims.dtype)
    return size(fill(dims, constant(False)), out_type=dims.dtype)


# ------------------------------------------------------------------ concat & split
def _infer_concat(inputs, attrs):
    *values, axis = inputs
    dtype = values[0].dtype
    for v in values:
        if v.dtype is not dtype:
            raise TypeError(f"Tensors in list passed to 'values' of 'ConcatV2' Op have types "
                            f"[{', '.join(t.dtype.name for t in values)}] that don't all match.")
    ranks = {v.shape.ndims for v in values} - {None}
    if len(ranks) > 1:
        first = next(v.shape.ndims for v in values if v.shape.ndims is not None)
        other = next(r for r in (v.shape.ndims for v in values) if r not in (None, first))
        raise errors.InvalidShapeError(
            f"Shape must be rank {first} but is rank {other}",
            f" (shapes of concat inputs must have equal rank, got "
            f"{[str(v.shape) for v in values]})")
    axes = static_ints(axis)
    if not ranks or axes is None:
        ndims = next(iter(ranks)) if ranks else None
        return [(dtype, TensorShape(None if ndims is None else [None] * ndims))]
    ndims = ranks.pop()
    if ndims == 0:
        raise ValueError(f"Can't concatenate scalars (use gf.stack instead): "
                         f"{[v.name for v in values]}")
    a = normalized_axis(axes[0], ndims, "concat")
    result = [None] * ndims
    total = 0
    for v in values:
        dims = v.shape.as_tuple()
        if dims is None:
            total = None
            continue
        for i, d in enumerate(dims):
            if i == a:
                continue
            if result[i] is None:
                result[i] = d
            elif d is not None and d != result[i]:
                raise ValueError(f"Dimension {i} in both shapes must be equal, but are "
                                 f"{result[i]} and {d}. Shapes are "
                                 f"{[str(t.shape) for t in values]} (concat axis {a})")
        total = None if total is None or dims[a] is None else total + dims[a]
    result[a] = total
    return [(dtype, TensorShape(result))]


define_op("ConcatV2", infer=_infer_concat,
          kernel=lambda *args: np.concatenate(args[:-1], axis=int(args[-1])))


register_foldable("ConcatV2")


@RegisterGradient("ConcatV2")
def _concat_grad(op, grad):
    *values, axis = op.inputs
    axis_value = static_ints(axis)
    ndims = values[0].shape.ndims
    if axis_value is None or ndims is None:
        # a negative axis counts from the end of the (run-time) rank, as TF1's rule does
        axis = select_v2(greater_equal(axis, 0), axis, add(axis, rank(values[0])))
        sizes = stack([gather(shape(v), axis) for v in values])
    else:
        a = axis_value[0] % ndims
        static = [v.shape.as_tuple()[a] if v.shape.ndims else None for v in values]
        sizes = static if None not in static else stack([gather_dim(v, a) for v in values])
    return split(grad, sizes, axis) + [None]


@constructor("concat", "values", "axis", single_op=False)
def concat(values, axis, name: str = "concat") -> Tensor:
    """Joins tensors along ``axis``."""
    values = [convert_to_tensor(v, name=f"values_{i}") for i, v in enumerate(values)]
    if not values:
        raise ValueError("concat needs at least one tensor")
    if len(values) == 1:
        return identity(values[0], name=name)
    axis = as_tensor(axis, dtype=None if isinstance(axis, Tensor) else dtypes.int32,
                     name="axis", like=values[0])
    return apply_op("ConcatV2", values + [axis], name=name)


def _infer_split(inputs, attrs):
    value, size_splits, axis = inputs
    check_index_dtype(size_splits, "SplitV", "size_splits")
    n = attrs["num_split"]
    sizes = static_ints(size_splits)
    axes = static_ints(axis)
    dims = value.shape.as_tuple()
    if sizes is not None:
        if len(sizes) != n:
            raise ValueError(f"size_splits of split has {len(sizes)} entries for {n} outputs")
        if sizes.count(-1) > 1 or any(s < -1 for s in sizes):
            raise ValueError(f"split sizes {sizes} must be non-negative, with at most one -1")
    if dims is None or axes is None:
        return [(value.dtype, TensorShape(None if dims is None else [None] * len(dims)))] * n
    a = normalized_axis(axes[0], len(dims), f"split of {value.name}")
    if sizes is not None and dims[a] is not None:
        known = sum(s for s in sizes if s != -1)
        if known > dims[a] or (-1 not in sizes and known != dims[a]):
            raise ValueError(f"Can't split axis {a} of {value.name} (size {dims[a]}) into "
                             f"pieces of size {sizes}")
        sizes = [dims[a] - known if s == -1 else s for s in sizes]
    outputs = []
    for i in range(n):
        d = list(dims)
        d[a] = None if sizes is None or sizes[i] == -1 else sizes[i]
        outputs.append((value.dtype, TensorShape(d)))
    return outputs


def _split_kernel(value, size_splits, axis, *, num_split):
    sizes = [int(s) for s in size_splits]
    a = int(axis)
    if -1 in sizes:
        sizes[sizes.index(-1)] = value.shape[a] - (sum(sizes) + 1)
    if sum(sizes) != value.shape[a] or min(sizes, default=0) < 0:
        raise ValueError(f"Can't split axis {a} of size {value.shape[a]} into pieces of size "
                         f"{list(size_splits)} (an equal split must divide the size)")
    # views by basic slicing, as np.split makes them, without its per-call set-up
    lead = (slice(None),) * (a % value.ndim)
    parts, start = [], 0
    for length in sizes:
        parts.append(value[lead + (slice(start, start + length),)])
        start += length
    return tuple(parts) if num_split != 1 else parts[0]


define_op("SplitV", infer=_infer_split, kernel=_split_kernel)


@RegisterGradient("SplitV")
def _split_grad(op, *grads):
    _, _, axis = op.inputs
    parts = [g if g is not None else zeros_like(t) for g, t in zip(grads, op.outputs)]
    return concat(parts, axis), None, None


@constructor("split", "value", "num_or_size_splits", "axis", "num", single_op=False)
def split(value, num_or_size_splits, axis=0, num=None, name: str = "split") -> list[Tensor]:
    """Splits ``value`` into equal parts (an int) or parts of the given sizes along ``axis``.

    One size may be -1: it takes what the others leave.
    """
    value = convert_to_tensor(value)
    axis_t = as_tensor(axis, dtype=None if isinstance(axis, Tensor) else dtypes.int32,
                       name="split_dim", like=value)
    if not isinstance(num_or_size_splits, Tensor) and np.ndim(num_or_size_splits) == 0:
        count = int(num_or_size_splits)
        sizes = _equal_split_sizes(value, axis_t, count)
    else:
        sizes = shape_tensor(num_or_size_splits, name="size_splits")
        count = num if num is not None else sizes.shape[0].value
        if count is None:
            raise ValueError(f"Cannot infer the number of splits of {value.name} from "
                             "size_splits; pass num")
    result = apply_op("SplitV", [value, sizes, axis_t], name=name, num_split=count)
    return [result] if isinstance(result, Tensor) else list(result)


def _equal_split_sizes(value: Tensor, axis: Tensor, count: int) -> Tensor:
    """Sizes of ``count`` equal parts of ``value`` along ``axis`` (checked when static)."""
    if count <= 0:
        raise ValueError(f"Cannot split {value.name} into {count} parts")
    axis_v = static_ints(axis)
    ndims = value.shape.ndims
    dim = None if axis_v is None or ndims is None else \
        value.shape.as_tuple()[normalized_axis(axis_v[0], ndims, f"split of {value.name}")]
    if dim is None:
        part = floordiv(gather(shape(value), axis), count)
        return fill([count], part, name="split_sizes")
    if dim % count:
        raise ValueError(f"Dimension size must be evenly divisible by {count} but is {dim} "
                         f"(dimension {axis_v[0]} of {value.name})")
    return int_vector([dim // count] * count, name="split_sizes")


# --------------------------------------------------------------- gather & scatter
def _check_gather_indices(indices: np.ndarray, limit: int) -> None:
    """InvalidArgumentError naming the first index outside [0, limit)."""
    bad = (indices < 0) | (indices >= limit)
    if bad.any():
        position = np.unravel_index(int(np.argmax(bad)), indices.shape)
        where = f"[{','.join(str(int(p)) for p in position)}]" if indices.ndim else ""
        raise errors.InvalidArgumentError(
            None, None, f"indices{where} = {indices[position]} is not in [0, {limit})")


def _infer_gather(inputs, attrs):
    params, indices, axis = inputs
    check_index_dtype(indices, "GatherV2", "indices")
    check_index_dtype(axis, "GatherV2", "axis")
    batch_dims = attrs["batch_dims"]
    axes = static_ints(axis)
    p, i = params.shape.as_tuple(), indices.shape.as_tuple()
    if p is None or i is None:
        return [(params.dtype, TensorShape(None))]
    if axes is None:  # an axis known only at run time: the rank is still known (TF1)
        return [(params.dtype, TensorShape([None] * (len(p) + len(i) - 1 - batch_dims)))]
    if not p:
        raise ValueError(f"params of gather must be at least 1-D, got the scalar {params.name}")
    a = normalized_axis(axes[0], len(p), f"gather from {params.name}")
    if not 0 <= batch_dims <= len(i):
        raise ValueError(f"batch_dims ({batch_dims}) must be in [0, rank(indices) = {len(i)}] "
                         f"for gather at {indices.name}")
    if batch_dims > a:
        raise ValueError(f"batch_dims ({batch_dims}) must be less than or equal to axis ({a}) "
                         f"for gather from {params.name}")
    batch = TensorShape.from_tuple(p[:batch_dims])
    if not batch.is_compatible_with(TensorShape.from_tuple(i[:batch_dims])):
        raise ValueError(f"Batch dimensions of gather must match: params {params.name} has "
                         f"shape {params.shape}, indices {indices.name} has shape "
                         f"{indices.shape} (batch_dims={batch_dims})")
    batch = batch.merge_with(TensorShape.from_tuple(i[:batch_dims])).as_tuple()
    return [(params.dtype, TensorShape.from_tuple(
        batch + p[batch_dims:a] + i[batch_dims:] + p[a + 1:]))]


def _gather_kernel(params, indices, axis, *, batch_dims):
    a = int(axis) % params.ndim
    _check_gather_indices(indices, params.shape[a])
    if batch_dims == 0:
        # a scalar index into a string (object) array takes a Python str/bytes: kept as
        # a 0-d object array (NumPy alone would make it a fixed-width '|S25' array)
        return np.asarray(np.take(params, indices, axis=a), dtype=params.dtype)
    batch_shape = params.shape[:batch_dims]
    if indices.shape[:batch_dims] != batch_shape:
        raise ValueError(f"params.shape[:{batch_dims}] = {list(batch_shape)} must equal "
                         f"indices.shape[:{batch_dims}] = {list(indices.shape[:batch_dims])}")
    flat_p = params.reshape((-1,) + params.shape[batch_dims:])
    flat_i = indices.reshape((-1,) + indices.shape[batch_dims:])
    parts = [np.take(p, i, axis=a - batch_dims) for p, i in zip(flat_p, flat_i)]
    stacked = np.stack(parts) if parts else np.zeros(
        (0,) + params.shape[batch_dims:a] + indices.shape[batch_dims:] + params.shape[a + 1:],
        params.dtype)
    return stacked.reshape(batch_shape + stacked.shape[1:])


define_op("GatherV2", infer=_infer_gather, kernel=_gather_kernel)


register_foldable("GatherV2")


@RegisterGradient("GatherV2")
def _gather_grad(op, grad):
    """Axis 0 without batch dims: the rows as IndexedSlices; otherwise a dense segment sum."""
    params, indices, axis = op.inputs
    batch_dims = op.get_attr("batch_dims")
    axis_value = static_ints(axis)
    ndims = params.shape.ndims
    if axis_value is None:
        raise LookupError(f"Gradient of gather needs a static axis (op '{op.name}')")
    a = axis_value[0] if ndims is None else axis_value[0] % ndims
    if a == 0 and batch_dims == 0:
        params_shape = shape_of_input(params)
        values = reshape(grad, concat([int_vector([-1], name="rows"), params_shape[1:]], 0))
        return IndexedSlices(values, reshape(indices, [-1]), params_shape), None, None
    if ndims is None or indices.shape.ndims is None:
        raise LookupError(f"Gradient of gather along axis {axis_value[0]} or with batch dims "
                          f"needs params and indices of known rank (op '{op.name}')")
    return _dense_gather_grad(params, indices, grad, a, batch_dims), None, None


def _dense_gather_grad(params: Tensor, indices: Tensor, grad, axis: int,
                       batch_dims: int) -> Tensor:
    """d params of a gather along ``axis`` after ``batch_dims`` batch dimensions.

    With params laid out as [batch, outer, dim, inner] and the gradient as [batch, outer,
    indices, inner], the gradient moves to [batch, indices, outer, inner] and is summed
    into row ``batch position * dim + index`` of a [batch * dim, outer, inner] tensor.
    """
    p_rank, b, a = params.shape.ndims, batch_dims, axis
    n_idx = indices.shape.ndims - b
    params_shape = shape_of_input(params)
    batch_shape = gather(params_shape, int_vector(range(b)))
    rest_shape = gather(params_shape, int_vector([*range(b, a), *range(a + 1, p_rank)]))
    to_rows = [*range(b), *range(a, a + n_idx), *range(b, a),
               *range(a + n_idx, p_rank - 1 + n_idx)]
    values = reshape(_transposed(convert_to_tensor(grad), to_rows),
                     concat([int_vector([-1]), rest_shape], 0))
    dim = cast(gather(params_shape, a), indices.dtype)
    ids, rows = indices, dim
    if b:
        count = cast(_num_elements(batch_shape), indices.dtype)
        offsets = multiply(range_op(0, count), dim)
        ids = add(indices, reshape(offsets, concat([batch_shape, int_vector([1] * n_idx)], 0)))
        rows = multiply(count, dim)
    summed = unsorted_segment_sum(values, reshape(ids, [-1]), rows)
    dense = reshape(summed, concat([batch_shape, gather(params_shape, int_vector([a])),
                                    rest_shape], 0))
    return _transposed(dense, [*range(b), *range(b + 1, a + 1), b, *range(a + 1, p_rank)])


def gather_dim(x: Tensor, axis: int) -> Tensor:
    """Size of dimension ``axis`` of ``x`` as an int32 scalar tensor (constant when static)."""
    static = x.shape.as_tuple()
    if static is not None and static[axis] is not None:
        return constant(np.int32(static[axis]), name="dim")
    return shape(x)[axis]


@constructor("GatherV2", "params", "indices", "validate_indices", "axis", "batch_dims",
             single_op=False)
def gather(params, indices, validate_indices=None, name: Optional[str] = None, axis=None,
           batch_dims: int = 0) -> Tensor:
    """Gathers slices of ``params`` along ``axis`` at ``indices``.

    The first ``batch_dims`` dimensions of params and indices are batch dimensions:
    each batch element gathers from its own params (negative counts from the back).
    """
    params_t = convert_to_tensor(params, name="params")
    indices_t = as_tensor(indices, name="indices", like=params_t)
    if batch_dims < 0:
        if indices_t.shape.ndims is None:
            raise ValueError("gather with a negative batch_dims needs indices of known rank")
        batch_dims += indices_t.shape.ndims
    if axis is None:
        axis = batch_dims
    axis_t = as_tensor(axis, dtype=None if isinstance(axis, Tensor) else
                       (indices_t.dtype if indices_t.dtype in INDEX_TYPES else dtypes.int32),
                       name="axis", like=params_t)
    return apply_op("GatherV2", [params_t, indices_t, axis_t], name=name or "GatherV2",
                    batch_dims=int(batch_dims))


def _check_nd_indices(indices: np.ndarray, bounds: tuple, what: str) -> None:
    """InvalidArgumentError naming the first index vector outside ``bounds``."""
    depth = indices.shape[-1]
    flat = indices.reshape(-1, depth)
    bad = ((flat < 0) | (flat >= np.asarray(bounds, dtype=np.int64))).any(axis=1)
    if bad.any():
        row = int(np.argmax(bad))
        raise errors.InvalidArgumentError(
            None, None, f"indices[{row}] = {flat[row].tolist()} does not index into {what} "
            f"{list(bounds)}")


def _infer_gather_nd(inputs, attrs):
    params, indices = inputs
    check_index_dtype(indices, "GatherNd", "indices")
    p, i = params.shape.as_tuple(), indices.shape.as_tuple()
    if i is not None and not i:
        raise ValueError(f"indices of gather_nd must be at least 1-D, got the scalar "
                         f"{indices.name}")
    depth = None if i is None else i[-1]
    if p is None or depth is None:
        return [(params.dtype, TensorShape(None))]
    if depth > len(p):
        raise ValueError(f"indices.shape[-1] must be <= params.rank, but saw indices shape: "
                         f"{indices.shape} and params shape: {params.shape} (gather_nd of "
                         f"{params.name})")
    return [(params.dtype, TensorShape.from_tuple(i[:-1] + p[depth:]))]


def _gather_nd_kernel(params, indices):
    depth = indices.shape[-1]
    _check_nd_indices(indices, params.shape[:depth], "param shape")
    if depth == 0:
        return np.array(np.broadcast_to(params, indices.shape[:-1] + params.shape))
    return params[tuple(np.moveaxis(indices, -1, 0))]


define_op("GatherNd", infer=_infer_gather_nd, kernel=_gather_nd_kernel)


@RegisterGradient("GatherNd")
def _gather_nd_grad(op, grad):
    """Rows of params (indices of shape [n, 1]) give IndexedSlices; else a scatter."""
    params, indices = op.inputs
    params_shape = shape_of_input(params)
    if indices.shape.ndims == 2 and indices.shape.as_tuple()[-1] == 1:
        return IndexedSlices(convert_to_tensor(grad), squeeze(indices, axis=[-1]),
                             params_shape), None
    return scatter_nd(indices, grad, params_shape), None


@constructor("GatherNd", "params", "indices", "batch_dims", single_op=False)
def gather_nd(params, indices, name: Optional[str] = None, batch_dims: int = 0) -> Tensor:
    """Gathers the slices of ``params`` addressed by the index vectors in ``indices``.

    ``indices[..., :]`` holds coordinates into the leading dimensions of params (after
    its ``batch_dims`` batch dimensions, shared with indices).
    """
    params_t = convert_to_tensor(params)
    indices_t = as_tensor(indices, like=params_t)
    if batch_dims == 0:
        return apply_op("GatherNd", [params_t, indices_t], name=name or "GatherNd")
    with graph_for([params_t]).name_scope(name or "GatherNd"):
        return _batch_gather_nd(params_t, indices_t, batch_dims)


def _batch_gather_nd(params: Tensor, indices: Tensor, batch_dims: int) -> Tensor:
    """``gather_nd`` with batch dims: the batch position becomes a leading coordinate."""
    i_rank, p_rank = indices.shape.ndims, params.shape.ndims
    if i_rank is None or p_rank is None:
        raise ValueError("gather_nd with batch_dims needs params and indices of known rank")
    if not 0 < batch_dims < min(i_rank, p_rank + 1):
        raise ValueError(f"batch_dims ({batch_dims}) must be less than the ranks of indices "
                         f"({i_rank}) and params ({p_rank}) for gather_nd")
    batch = params.shape[:batch_dims]
    if not batch.is_compatible_with(indices.shape[:batch_dims]):
        raise ValueError(f"Batch dimensions of gather_nd must match: params {params.name} has "
                         f"shape {params.shape}, indices {indices.name} has shape "
                         f"{indices.shape} (batch_dims={batch_dims})")
    params_shape = shape_of_input(params)
    batch_shape = params_shape[:batch_dims]
    flat_params = reshape(params, concat([int_vector([-1]), params_shape[batch_dims:]], 0))
    positions = reshape(range_op(0, _num_elements(batch_shape)),
                        concat([batch_shape, int_vector([1] * (i_rank - batch_dims))], 0))
    coordinate_shape = concat([shape_of_input(indices)[:-1], int_vector([1])], 0)
    coordinates = broadcast_to(cast(positions, indices.dtype), coordinate_shape)
    result = apply_op("GatherNd", [flat_params, concat([coordinates, indices], -1)],
                      name="GatherNd")
    depth = indices.shape[-1].value
    if depth is not None:
        result.set_shape(batch.merge_with(indices.shape[:batch_dims]).concatenate(
            indices.shape[batch_dims:-1]).concatenate(params.shape[batch_dims + depth:]))
    return result


def _infer_scatter_nd(inputs, attrs):
    indices, updates, shape_t = inputs
    check_index_dtype(indices, "ScatterNd", "indices")
    check_index_dtype(shape_t, "ScatterNd", "shape")
    check_rank(shape_t, (1,), "shape of scatter_nd")
    out = static_shape_of(shape_t)
    i, u, o = indices.shape.as_tuple(), updates.shape.as_tuple(), out.as_tuple()
    if i is not None and not i:
        raise ValueError(f"indices of scatter_nd must be at least 1-D, got the scalar "
                         f"{indices.name}")
    if None not in (i, u, o) and i[-1] is not None:
        if i[-1] > len(o):
            raise ValueError(f"indices.shape[-1] ({i[-1]}) must be <= the rank of the output "
                             f"shape {out} (scatter_nd at {indices.name})")
        expected = TensorShape.from_tuple(i[:-1] + o[i[-1]:])
        if not expected.is_compatible_with(updates.shape):
            raise ValueError(f"updates of scatter_nd must have shape {expected} (indices shape "
                             f"{indices.shape}, output shape {out}), but {updates.name} has "
                             f"shape {updates.shape}")
    return [(updates.dtype, out)]


def _scatter_nd_kernel(indices, updates, shape_):
    out_shape = tuple(int(d) for d in shape_)
    depth = indices.shape[-1]
    if updates.shape != indices.shape[:-1] + out_shape[depth:]:
        raise ValueError(f"updates has shape {list(updates.shape)}, expected "
                         f"{list(indices.shape[:-1] + out_shape[depth:])}")
    _check_nd_indices(indices, out_shape[:depth], "shape")
    out = np.zeros(out_shape, updates.dtype)
    np.add.at(out, tuple(np.moveaxis(indices, -1, 0)), updates)
    return out


define_op("ScatterNd", infer=_infer_scatter_nd, kernel=_scatter_nd_kernel)


@RegisterGradient("ScatterNd")
def _scatter_nd_grad(op, grad):
    return None, gather_nd(grad, op.inputs[0]), None


@constructor("ScatterNd", "indices", "updates", "shape")
def scatter_nd(indices, updates, shape, name: Optional[str] = None) -> Tensor:  # noqa: F811
    """A zero tensor of ``shape`` with ``updates`` added at ``indices`` (repeats add up)."""
    updates_t = convert_to_tensor(updates)
    indices_t = as_tensor(indices, like=updates_t)
    return apply_op("ScatterNd", [indices_t, updates_t, shape_tensor(shape)],
                    name=name or "ScatterNd")


# --------------------------------------------------------- unsorted segment sums
def infer_unsorted_segment(inputs, attrs):
    """Inference of every ``UnsortedSegment*`` op: [num_segments] + data dims past the ids."""
    data, ids, num = inputs
    check_index_dtype(ids, "UnsortedSegment", "segment_ids")
    check_index_dtype(num, "UnsortedSegment", "num_segments")
    if num.shape.ndims not in (None, 0):
        raise ValueError(f"num_segments must be a scalar, got shape {num.shape} ({num.name})")
    d, i = data.shape.as_tuple(), ids.shape.as_tuple()
    count = static_ints(num)
    if d is None or i is None:
        return [(data.dtype, TensorShape(None))]
    if len(i) > len(d) or not TensorShape(d[:len(i)]).is_compatible_with(TensorShape(i)):
        raise ValueError(f"segment_ids shape {ids.shape} must be a prefix of data shape "
                         f"{data.shape} ({ids.name}, {data.name})")
    return [(data.dtype, TensorShape([None if count is None else count[0]]
                                     + list(d[len(i):])))]


def unsorted_segment_kernel(reduce: np.ufunc, initial):
    """A kernel reducing data rows into segments with ``reduce``; negative ids are dropped.

    ``initial(dtype)`` is the value of an empty segment.
    """
    def kernel(data, ids, num):
        count = int(num)
        if data.shape[:ids.ndim] != ids.shape:
            raise ValueError(f"segment_ids shape {list(ids.shape)} must be a prefix of data "
                             f"shape {list(data.shape)}")
        flat_ids = ids.reshape(-1)
        if flat_ids.size and flat_ids.max() >= count:
            raise errors.InvalidArgumentError(
                None, None, f"segment_ids[{int(np.argmax(flat_ids >= count))}] = "
                f"{int(flat_ids.max())} is out of range [0, {count})")
        inner = data.shape[ids.ndim:]
        out = np.full((count,) + inner, initial(data.dtype), dtype=data.dtype)
        keep = flat_ids >= 0
        reduce.at(out, flat_ids[keep], data.reshape((-1,) + inner)[keep])
        return out
    return kernel


define_op("UnsortedSegmentSum", infer=infer_unsorted_segment,
          kernel=unsorted_segment_kernel(np.add, lambda dtype: 0))


@RegisterGradient("UnsortedSegmentSum")
def _unsorted_segment_sum_grad(op, grad):
    """Each data row receives its segment's gradient; rows with negative ids get zero."""
    return gather_segment_rows(grad, op.inputs[1]), None, None


def gather_segment_rows(values: Tensor, ids: Tensor) -> Tensor:
    """``values[ids]``: each data row's segment entry; rows of negative ids get zeros."""
    zero = constant(0, dtype=ids.dtype)
    gathered = gather(values, maximum(ids, zero))
    valid = with_trailing_ones(greater_equal(ids, zero), gathered)
    return select_v2(valid, gathered, zeros_like(gathered))


def with_trailing_ones(t: Tensor, like: Tensor) -> Tensor:
    """``t`` with size-1 dimensions appended up to ``like``'s rank, to broadcast against it."""
    ranks = (t.shape.ndims, like.shape.ndims)
    if None in ranks:
        tail = ones([rank(like) - rank(t)], dtype=dtypes.int32)
    elif ranks[0] == ranks[1]:
        return t
    else:
        tail = int_vector([1] * (ranks[1] - ranks[0]))
    return reshape(t, concat([shape_of_input(t), tail], 0))


@constructor("UnsortedSegmentSum", "data", "segment_ids", "num_segments")
def unsorted_segment_sum(data, segment_ids, num_segments, name: Optional[str] = None) -> Tensor:
    """Sums rows of ``data`` into ``num_segments`` segments; negative ids are dropped."""
    data_t = convert_to_tensor(data)
    check_dtype_in(data_t, NUMERIC, "UnsortedSegmentSum", "data")
    ids = as_tensor(segment_ids, like=data_t)
    num = as_tensor(num_segments, dtype=None if isinstance(num_segments, Tensor) else ids.dtype,
                    like=data_t)
    return apply_op("UnsortedSegmentSum", [data_t, ids, num], name=name or "UnsortedSegmentSum")


def indexed_slices_to_tensor(value: IndexedSlices, dtype=None, name=None,
                             as_ref: bool = False) -> Tensor:
    """Densifies ``value`` by an unsorted segment sum, warning when it may be huge."""
    if dtype is not None and value.dtype is not dtype:
        raise ValueError(f"Tensor conversion requested dtype {dtype.name} for IndexedSlices "
                         f"with dtype {value.dtype.name}")
    if value.dense_shape is None:
        raise ValueError("Tensor conversion requested for IndexedSlices without "
                         f"dense_shape: {value!r}")
    dense_shape = constant_value(value.dense_shape)
    if dense_shape is not None:
        num_elements = int(np.prod(dense_shape, dtype=np.int64))
        if num_elements >= LARGE_SPARSE_NUM_ELEMENTS:
            warnings.warn(f"Converting sparse IndexedSlices to a dense Tensor with "
                          f"{num_elements} elements. This may consume a large amount of "
                          "memory.", stacklevel=3)
    else:
        warnings.warn("Converting sparse IndexedSlices to a dense Tensor of unknown shape. "
                      "This may consume a large amount of memory.", stacklevel=3)
    num_rows = dense_shape[0] if dense_shape is not None else value.dense_shape[0]
    return unsorted_segment_sum(value.values, value.indices, num_rows, name=name)


register_tensor_conversion_function(IndexedSlices, indexed_slices_to_tensor)


# ------------------------------------------------------------ one-hot and masks
_ONE_HOT_INDEX_TYPES = (dtypes.uint8, dtypes.int8, dtypes.int32, dtypes.int64)


def _infer_one_hot(inputs, attrs):
    indices, depth, on_value, off_value = inputs
    check_dtype_in(indices, _ONE_HOT_INDEX_TYPES, "OneHot", "indices")
    check_dtype_in(depth, (dtypes.int32,), "OneHot", "depth")
    for t, arg in ((depth, "depth"), (on_value, "on_value"), (off_value, "off_value")):
        if t.shape.ndims not in (None, 0):
            raise ValueError(f"{arg} of one_hot must be a scalar, got shape {t.shape} "
                             f"({t.name})")
    if on_value.dtype is not off_value.dtype:
        raise TypeError(f"dtype {on_value.dtype.name} of on_value does not match dtype "
                        f"{off_value.dtype.name} of off_value")
    count = static_ints(depth)
    if count is not None and count[0] < 0:
        raise ValueError(f"depth of one_hot must be non-negative, got {count[0]}")
    dims = indices.shape.as_tuple()
    if dims is None:
        return [(on_value.dtype, TensorShape(None))]
    a = attrs["axis"]
    a = len(dims) if a == -1 else normalized_axis(a, len(dims) + 1, "one_hot")
    return [(on_value.dtype, TensorShape.from_tuple(
        dims[:a] + (None if count is None else count[0],) + dims[a:]))]


def _one_hot_kernel(indices, depth, on_value, off_value, *, axis):
    if depth < 0:
        raise ValueError(f"depth must be non-negative, got {depth}")
    a = np.ndim(indices) if axis == -1 else axis
    classes = np.arange(int(depth)).reshape((-1,) + (1,) * (np.ndim(indices) - a))
    hot = np.expand_dims(indices, a) == classes
    return np.where(hot, on_value, off_value).astype(on_value.dtype, copy=False)


define_op("OneHot", infer=_infer_one_hot, kernel=_one_hot_kernel)


NotDifferentiable("OneHot")


def _one_hot_dtype(values: dict, dtype: Optional[dtypes.DType]) -> dtypes.DType:
    """The dtype of a one-hot tensor: ``dtype``, else the given values', else float32."""
    if len({v.dtype for v in values.values()}) > 1:
        raise TypeError(f"dtype {values['on_value'].dtype.name} of on_value does not match "
                        f"dtype {values['off_value'].dtype.name} of off_value")
    for arg, value in values.items():
        if dtype is not None and value.dtype is not dtype:
            raise TypeError(f"dtype {value.dtype.name} of {arg} does not match dtype "
                            f"parameter {dtype.name}")
        return value.dtype
    return dtype or dtypes.float32


@constructor("one_hot", "indices", "depth", "on_value", "off_value", "axis", "dtype",
             single_op=False)
def one_hot(indices, depth, on_value=None, off_value=None, axis=None, dtype=None,
            name: Optional[str] = None) -> Tensor:
    """One-hot vectors of length ``depth`` along ``axis`` (default last).

    Out-of-range (and negative) indices give all-``off_value`` vectors. The dtype is
    ``dtype``, else that of ``on_value``/``off_value``, else float32.
    """
    check_python_operand(depth, dtypes.int32, "depth", "OneHot")
    indices_t = convert_to_tensor(indices, name="indices")
    hint = None if dtype is None else dtypes.as_dtype(dtype)
    given = {arg: convert_to_tensor(v, dtype_hint=hint, name=arg)
             for arg, v in (("on_value", on_value), ("off_value", off_value)) if v is not None}
    out_dtype = _one_hot_dtype(given, hint)
    on_t, off_t = (given[arg] if arg in given else constant(default, dtype=out_dtype, name=arg)
                   for arg, default in (("on_value", 1), ("off_value", 0)))
    depth_t = as_tensor(depth, dtype=None if isinstance(depth, Tensor) else dtypes.int32,
                        name="depth", like=indices_t)
    return apply_op("OneHot", [indices_t, depth_t, on_t, off_t], name=name or "one_hot",
                    axis=-1 if axis is None else int(axis))


def _infer_sequence_mask(inputs, attrs):
    lengths = inputs[0]
    check_dtype_in(lengths, (dtypes.int8, dtypes.int16) + INDEX_TYPES, "SequenceMask",
                   "lengths")
    width = None
    if len(inputs) == 2:
        maxlen = inputs[1]
        check_index_dtype(maxlen, "SequenceMask", "maxlen")
        if maxlen.shape.ndims not in (None, 0):
            raise ValueError(f"maxlen of sequence_mask must be a scalar, got shape "
                             f"{maxlen.shape} ({maxlen.name})")
        width = (static_ints(maxlen) or [None])[0]
        if width is not None and width < 0:
            raise ValueError(f"maxlen of sequence_mask must be non-negative, got {width}")
    return [(attrs["dtype"], lengths.shape.concatenate([width]))]


def _sequence_mask_kernel(lengths, maxlen=None, *, dtype):
    width = int(maxlen) if maxlen is not None else int(np.max(lengths, initial=0))
    if width < 0:
        raise ValueError(f"maxlen must be non-negative, got {width}")
    mask = np.arange(width) < np.expand_dims(lengths, -1)
    return mask.astype(dtype.as_numpy_dtype)


define_op("SequenceMask", infer=_infer_sequence_mask, kernel=_sequence_mask_kernel)


NotDifferentiable("SequenceMask")


@constructor("SequenceMask", "lengths", "maxlen", "dtype", single_op=False)
def sequence_mask(lengths, maxlen=None, dtype=dtypes.bool, name: Optional[str] = None) -> Tensor:
    """``mask[..., j] = j < lengths[...]`` for j < ``maxlen`` (default: the largest length)."""
    lengths_t = convert_to_tensor(lengths)
    inputs = [lengths_t]
    if maxlen is not None:
        inputs.append(as_tensor(maxlen, dtype=None if isinstance(maxlen, Tensor)
                                else dtypes.int32, like=lengths_t))
    return apply_op("SequenceMask", inputs, name=name or "SequenceMask",
                    dtype=dtypes.as_dtype(dtype))


# ----------------------------------------------------------------------- unique
Unique = collections.namedtuple("Unique", ["y", "idx"])


UniqueWithCounts = collections.namedtuple("UniqueWithCounts", ["y", "idx", "count"])


def _infer_unique(inputs, attrs):
    x = inputs[0]
    check_rank(x, (1,), "x of unique")
    out_idx = attrs["out_idx"]
    if out_idx not in INDEX_TYPES:
        raise TypeError(f"out_idx of unique must be int32 or int64, got {out_idx.name}")
    specs = [(x.dtype, TensorShape([None])), (out_idx, x.shape.with_rank(1))]
    return specs + [(out_idx, TensorShape([None]))] * attrs["with_counts"]


def _unique_kernel(x, *, out_idx, with_counts):
    """Unique values in order of first appearance, each element's position, counts."""
    values, first, inverse, counts = np.unique(x, return_index=True, return_inverse=True,
                                               return_counts=True)
    order = np.argsort(first, kind="stable")
    position = np.empty_like(order)
    position[order] = np.arange(order.size)
    index_dtype = out_idx.as_numpy_dtype
    result = (values[order], position[inverse.reshape(-1)].astype(index_dtype))
    return result + (counts[order].astype(index_dtype),) if with_counts else result


define_op("Unique", infer=_infer_unique, kernel=_unique_kernel)


define_op("UniqueWithCounts", infer=_infer_unique, kernel=_unique_kernel)


NotDifferentiable("Unique")


NotDifferentiable("UniqueWithCounts")


@constructor("Unique", "x", "out_idx", single_op=False)
def unique(x, out_idx=dtypes.int32, name: Optional[str] = None) -> Unique:
    """The distinct values ``y`` of the 1-D ``x`` in order of appearance; ``x = y[idx]``."""
    return Unique(*apply_op("Unique", [convert_to_tensor(x)], name=name or "Unique",
                            out_idx=dtypes.as_dtype(out_idx), with_counts=False))


@constructor("UniqueWithCounts", "x", "out_idx", single_op=False)
def unique_with_counts(x, out_idx=dtypes.int32, name: Optional[str] = None) -> UniqueWithCounts:
    """Like ``unique``, also counting how often each distinct value occurs."""
    return UniqueWithCounts(*apply_op("UniqueWithCounts", [convert_to_tensor(x)],
                                      name=name or "UniqueWithCounts",
                                      out_idx=dtypes.as_dtype(out_idx), with_counts=True))
