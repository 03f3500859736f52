"""Row-wise SparseTensor ops and compositions, as TF1 has them: ``fill_empty_rows``
(``SparseFillEmptyRows``, with ``SparseFillEmptyRowsGrad``), ``sparse_reduce_max``,
``sparse_reduce_max_sparse``, ``sparse_reduce_sum_sparse``, ``edit_distance``
(``EditDistance``), and ``sparse_retain``, ``sparse_transpose``, ``sparse_reset_shape``,
``sparse_merge``, ``sparse_to_indicator``, ``from_dense``, ``eye``, ``expand_dims``
composed from public ops.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from gradflow.framework import dtypes, errors
from gradflow.framework.constant import constant_value, convert_to_tensor
from gradflow.framework.graph import Tensor, name_scope
from gradflow.framework.registry import NotDifferentiable, RegisterGradient, define_op
from gradflow.framework.sparse_tensor import SparseTensor
from gradflow.framework.tensor_shape import TensorShape
from gradflow.ops import array
from gradflow.ops import math as math_ops
from gradflow.ops.common import apply_op, graph_for, static_ints
from gradflow.ops.sparse_more import no_gradient, row_major_order, sparse_reorder
from gradflow.ops.sparse_ops import as_sparse, reduction_args, sparse_tensor_to_dense

__all__ = ["sparse_fill_empty_rows", "sparse_reduce_max", "sparse_reduce_max_sparse",
           "sparse_reduce_sum_sparse", "edit_distance", "sparse_retain", "sparse_transpose",
           "sparse_reset_shape", "sparse_merge", "sparse_to_indicator", "from_dense",
           "sparse_eye", "sparse_expand_dims"]


def _rank(shape: Tensor) -> Optional[int]:
    return shape.shape.as_list()[0] if shape.shape.ndims == 1 else None


# --------------------------------------------------------- SparseFillEmptyRows
def _infer_fill(inputs, attrs):
    indices, values, shape, default = inputs
    if default.dtype is not values.dtype:
        raise TypeError(f"Input 'default_value' of 'SparseFillEmptyRows' Op has type "
                        f"{default.dtype.name} that does not match type {values.dtype.name} "
                        "of argument 'values'.")
    if default.shape.ndims not in (None, 0):
        raise ValueError(f"default_value must be a scalar, got shape {default.shape}")
    rows = static_ints(shape)
    return [(dtypes.int64, TensorShape([None, _rank(shape)])),
            (values.dtype, TensorShape([None])),
            (dtypes.bool, TensorShape([None if rows is None else rows[0]])),
            (dtypes.int64, TensorShape([indices.shape.as_list()[0]
                                        if indices.shape.ndims == 2 else None]))]


def _fill_kernel(indices, values, shape, default):
    rows = int(shape[0])
    present = np.zeros(rows, dtype=bool)
    if indices.size:
        if indices[:, 0].min() < 0 or indices[:, 0].max() >= rows:
            bad = int(np.flatnonzero((indices[:, 0] < 0) | (indices[:, 0] >= rows))[0])
            raise errors.InvalidArgumentError(
                None, None, f"indices({bad}, 0) is invalid: {int(indices[bad, 0])} >= {rows}")
        present[indices[:, 0]] = True
    empty = np.flatnonzero(~present)
    filler = np.zeros((len(empty), indices.shape[1]), dtype=np.int64)
    filler[:, 0] = empty
    all_indices = np.concatenate([indices.astype(np.int64), filler])
    all_values = np.concatenate([values, np.full(len(empty), default, dtype=values.dtype)])
    # stable by row: entries keep their order within a row, as TF's kernel does
    order = np.argsort(all_indices[:, 0], kind="stable")
    reverse = np.empty(len(order), dtype=np.int64)
    reverse[order] = np.arange(len(order))
    return (np.ascontiguousarray(all_indices[order]), all_values[order], ~present,
            reverse[:indices.shape[0]])


def _fill_grad_kernel(reverse_index_map, grad_values):
    picked = grad_values[reverse_index_map]
    unused = np.ones(grad_values.shape[0], dtype=bool)
    unused[reverse_index_map] = False
    return picked, np.asarray(grad_values[unused].sum(), dtype=grad_values.dtype)


define_op("SparseFillEmptyRows", infer=_infer_fill, kernel=_fill_kernel)
define_op("SparseFillEmptyRowsGrad", infer=lambda inputs, attrs: [
    (inputs[1].dtype, inputs[0].shape), (inputs[1].dtype, TensorShape([]))],
    kernel=_fill_grad_kernel)
RegisterGradient("SparseFillEmptyRowsGrad")(no_gradient)


@RegisterGradient("SparseFillEmptyRows")
def _fill_grad(op, _indices_grad, values_grad, _indicator_grad, _map_grad):
    """Entries get their own gradient back; the default value gets the filled ones'."""
    d_values, d_default = apply_op("SparseFillEmptyRowsGrad", [op.outputs[3], values_grad],
                                   name="SparseFillEmptyRowsGrad")
    return None, d_values, None, d_default


def sparse_fill_empty_rows(sp_input, default_value, name: Optional[str] = None) -> tuple:
    """``sp_input`` with an entry ``default_value`` at column 0 of each empty row, and a
    bool vector marking those rows."""
    sp = as_sparse(sp_input, "sp_input")
    graph = graph_for([sp.values])
    with graph.as_default(), graph.atomic(), name_scope(name, "SparseFillEmptyRows",
                                                        [sp.values]):
        default = convert_to_tensor(default_value, dtype=sp.dtype)
        indices, values, empty, _ = apply_op(
            "SparseFillEmptyRows", [sp.indices, sp.values, sp.dense_shape, default],
            name="SparseFillEmptyRows")
        return SparseTensor(indices, values, sp.dense_shape), empty


# ------------------------------------------------------------ sparse reductions
def _reduced_groups(indices, shape, axes, keep_dims):
    rank = len(shape)
    for axis in np.reshape(axes, -1):
        if not -rank <= int(axis) < rank:
            raise errors.InvalidArgumentError(
                None, None, f"Invalid reduction dimension {int(axis)}, for input with "
                f"{rank} dimensions.")
    reduced = {int(a) % rank for a in np.reshape(axes, -1)}
    kept = [d for d in range(rank) if d not in reduced]
    out_shape = [1 if d in reduced else int(shape[d]) for d in range(rank)] if keep_dims \
        else [int(shape[d]) for d in kept]
    keys = indices[:, kept] if indices.size else np.zeros((indices.shape[0], len(kept)),
                                                          np.int64)
    if keep_dims:
        full = np.zeros((indices.shape[0], rank), dtype=np.int64)
        full[:, kept] = keys
        keys = full
    return keys, out_shape


def _group_reduce(keys, values, ufunc, initial):
    if not len(keys):
        return np.zeros((0, keys.shape[1]), np.int64), values[:0]
    groups, inverse = np.unique(keys, axis=0, return_inverse=True)
    out = np.full(len(groups), initial, dtype=values.dtype)
    ufunc.at(out, inverse.reshape(-1), values)
    return groups.astype(np.int64), out


def _lowest(dtype) -> object:
    return -np.inf if np.issubdtype(dtype, np.floating) else np.iinfo(dtype).min


def _reduce_max_kernel(indices, values, shape, axes, *, keep_dims):
    keys, out_shape = _reduced_groups(indices, shape, axes, keep_dims)
    groups, best = _group_reduce(keys, values, np.maximum, _lowest(values.dtype))
    dense = np.full(out_shape, _lowest(values.dtype), dtype=values.dtype)
    if len(groups):
        dense[tuple(groups.T)] = best
    return dense


def _sparse_output(ufunc, initial=None):
    def kernel(indices, values, shape, axes, *, keep_dims):
        keys, out_shape = _reduced_groups(indices, shape, axes, keep_dims)
        start = _lowest(values.dtype) if initial is None else initial
        groups, reduced = _group_reduce(keys, values, ufunc, start)
        return groups.reshape(len(groups), len(out_shape)), reduced, \
            np.asarray(out_shape, dtype=np.int64)
    return kernel


def _infer_reduce_dense(inputs, attrs):
    _, values, shape, axes = inputs
    dims, kept = static_ints(shape), static_ints(axes)
    if dims is None or kept is None:
        return [(values.dtype, TensorShape(None))]
    rank = len(dims)
    reduced = {a % rank for a in kept}
    out = [1 if d in reduced else dims[d] for d in range(rank)] if attrs["keep_dims"] else \
        [dims[d] for d in range(rank) if d not in reduced]
    return [(values.dtype, TensorShape(out))]


def _infer_reduce_sparse(inputs, attrs):
    return [(dtypes.int64, TensorShape(None)), (inputs[1].dtype, TensorShape(None)),
            (dtypes.int64, TensorShape(None))]


define_op("SparseReduceMax", infer=_infer_reduce_dense, kernel=_reduce_max_kernel)
define_op("SparseReduceMaxSparse", infer=_infer_reduce_sparse,
          kernel=_sparse_output(np.maximum))
define_op("SparseReduceSumSparse", infer=_infer_reduce_sparse,
          kernel=_sparse_output(np.add, 0))
for _op_type in ("SparseReduceMax", "SparseReduceMaxSparse", "SparseReduceSumSparse"):
    RegisterGradient(_op_type)(no_gradient)


def _reduction(op_type: str, sp_input, axis, keepdims, reduction_axes, keep_dims):
    axis, keep = reduction_args(axis, keepdims, reduction_axes, keep_dims)
    sp = as_sparse(sp_input, "sp_input")
    graph = graph_for([sp.values])
    with graph.as_default(), graph.atomic(), graph.name_scope(op_type) as scope:
        if axis is None:
            rank = sp.shape.ndims
            if rank is None:
                raise ValueError(f"{op_type} with axis=None needs a SparseTensor of known "
                                 "rank (sp_input)")
            axis = list(range(rank))
        axes = convert_to_tensor(axis, name="reduction_axes",
                                 dtype=None if isinstance(axis, Tensor) else dtypes.int32)
        return apply_op(op_type, [sp.indices, sp.values, sp.dense_shape, axes], name=scope,
                        keep_dims=keep)


def sparse_reduce_max(sp_input, axis=None, keepdims=None, reduction_axes=None,
                      keep_dims=None) -> Tensor:
    """The maximum over ``axis`` of the entries present (the dtype's lowest value where
    none is)."""
    return _reduction("SparseReduceMax", sp_input, axis, keepdims, reduction_axes, keep_dims)


def sparse_reduce_max_sparse(sp_input, axis=None, keepdims=None, reduction_axes=None,
                             keep_dims=None) -> SparseTensor:
    """``sparse_reduce_max`` as a SparseTensor of the reduced positions with entries."""
    return SparseTensor(*_reduction("SparseReduceMaxSparse", sp_input, axis, keepdims,
                                    reduction_axes, keep_dims))


def sparse_reduce_sum_sparse(sp_input, axis=None, keepdims=None, reduction_axes=None,
                             keep_dims=None) -> SparseTensor:
    """``sparse_reduce_sum`` as a SparseTensor of the reduced positions with entries."""
    return SparseTensor(*_reduction("SparseReduceSumSparse", sp_input, axis, keepdims,
                                    reduction_axes, keep_dims))


# ---------------------------------------------------------------- EditDistance
def _levenshtein(a: list, b: list) -> int:
    previous = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        current = [i]
        for j, y in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1,
                               previous[j - 1] + (x != y)))
        previous = current
    return previous[-1]


def _sequences(indices, values, leading) -> dict:
    out: dict = {}
    order = row_major_order(indices)
    for i in order:
        out.setdefault(tuple(int(v) for v in indices[i, :leading]), []).append(values[i])
    return out


def _edit_distance_kernel(hyp_indices, hyp_values, hyp_shape, truth_indices, truth_values,
                          truth_shape, *, normalize):
    rank = len(hyp_shape)
    if len(truth_shape) != rank:
        raise errors.InvalidArgumentError(
            None, None, f"hypothesis and truth must have the same rank, got {rank} and "
            f"{len(truth_shape)}")
    out_shape = np.maximum(hyp_shape, truth_shape)[:-1]
    hyps = _sequences(hyp_indices, hyp_values, rank - 1)
    truths = _sequences(truth_indices, truth_values, rank - 1)
    out = np.zeros(tuple(int(d) for d in out_shape), dtype=np.float32)
    for at in np.ndindex(*out.shape):
        hyp, truth = hyps.get(at, []), truths.get(at, [])
        distance = float(_levenshtein(hyp, truth))
        if normalize:
            distance = distance / len(truth) if truth else (np.inf if hyp else 0.0)
        out[at] = distance
    return out


def _infer_edit_distance(inputs, attrs):
    hyp_shape, truth_shape = static_ints(inputs[2]), static_ints(inputs[5])
    if inputs[1].dtype is not inputs[4].dtype:
        raise TypeError(f"Input 'truth_values' of 'EditDistance' Op has type "
                        f"{inputs[4].dtype.name} that does not match type "
                        f"{inputs[1].dtype.name} of argument 'hypothesis_values'.")
    if hyp_shape is None or truth_shape is None:
        rank = _rank(inputs[2])
        return [(dtypes.float32, TensorShape(None if rank is None else [None] * (rank - 1)))]
    return [(dtypes.float32, TensorShape(list(np.maximum(hyp_shape, truth_shape)[:-1])))]


define_op("EditDistance", infer=_infer_edit_distance, kernel=_edit_distance_kernel)
NotDifferentiable("EditDistance")


def edit_distance(hypothesis, truth, normalize: bool = True,
                  name: str = "edit_distance") -> Tensor:
    """The Levenshtein distance between the sequences (along the last dimension) of two
    SparseTensors, divided by the truth's length when ``normalize``."""
    hyp, truth_sp = as_sparse(hypothesis, "hypothesis"), as_sparse(truth, "truth")
    graph = graph_for([hyp.values, truth_sp.values])
    with graph.as_default(), graph.atomic():
        return apply_op("EditDistance", [hyp.indices, hyp.values, hyp.dense_shape,
                                         truth_sp.indices, truth_sp.values,
                                         truth_sp.dense_shape],
                        name=name, normalize=bool(normalize))


# ---------------------------------------------------------------- compositions
def sparse_retain(sp_input, to_retain) -> SparseTensor:
    """The entries where the bool vector ``to_retain`` is true."""
    sp = as_sparse(sp_input, "sp_input")
    keep = convert_to_tensor(to_retain)
    if keep.shape.ndims not in (None, 1):
        raise ValueError(f"to_retain must be a vector, got shape {keep.shape}")
    graph = graph_for([sp.values])
    with graph.as_default(), graph.atomic():
        where = array.reshape(math_ops.where(keep), [-1])
        return SparseTensor(array.gather(sp.indices, where), array.gather(sp.values, where),
                            array.identity(sp.dense_shape))


def sparse_transpose(sp_input, perm=None, name: Optional[str] = None) -> SparseTensor:
    """The SparseTensor with its dimensions permuted by ``perm`` (reversed by default),
    entries put back in row-major order."""
    sp = as_sparse(sp_input, "sp_input")
    graph = graph_for([sp.values])
    with graph.as_default(), graph.atomic(), name_scope(name, "SparseTranspose",
                                                        [sp.values]):
        rank = sp.shape.ndims
        if perm is None:
            if rank is None:
                raise ValueError("sparse_transpose without perm needs a known rank")
            perm = list(range(rank))[::-1]
        indices = array.transpose(array.gather(array.transpose(sp.indices), perm))
        known = constant_value(sp.dense_shape)
        shape = np.asarray(known)[np.asarray(perm)] if known is not None else \
            array.gather(sp.dense_shape, perm)
        return sparse_reorder(SparseTensor(indices, sp.values, shape))


def sparse_reset_shape(sp_input, new_shape=None) -> SparseTensor:
    """The SparseTensor with dense shape ``new_shape`` (which must hold every entry), or
    the tightest shape holding its entries."""
    sp = as_sparse(sp_input, "sp_input")
    graph = graph_for([sp.values])
    with graph.as_default(), graph.atomic():
        indices, values = array.identity(sp.indices), array.identity(sp.values)
        if new_shape is None:
            shape = array.identity(sp.dense_shape)
            tight = math_ops.reduce_max(indices, axis=0) + array.ones_like(shape)
            return SparseTensor(indices, values, math_ops.maximum(tight, 0))
        shape = convert_to_tensor(new_shape, dtype=dtypes.int64)
        known, wanted = constant_value(sp.dense_shape), constant_value(shape)
        if known is not None and wanted is not None:
            if len(known) != len(wanted) or np.any(np.asarray(wanted) < np.asarray(known)):
                raise ValueError(f"Requested new_shape {list(wanted)} must be >= the shape "
                                 f"{list(known)} of sp_input in every dimension")
        return SparseTensor(indices, values, shape)


def sparse_merge(sp_ids, sp_values, vocab_size, name: Optional[str] = None,
                 already_sorted: bool = False) -> SparseTensor:
    """A SparseTensor one rank up: entry ``i`` of ``sp_values`` moves to column
    ``sp_ids.values[i]`` of a last dimension of size ``vocab_size``."""
    ids, values = as_sparse(sp_ids, "sp_ids"), as_sparse(sp_values, "sp_values")
    graph = graph_for([ids.values, values.values])
    with graph.as_default(), graph.atomic(), name_scope(name, "SparseMerge",
                                                        [ids.values, values.values]):
        columns = array.expand_dims(math_ops.cast(ids.values, dtypes.int64), 1)
        indices = array.concat([ids.indices[:, :-1], columns], 1)
        size = math_ops.cast(convert_to_tensor(vocab_size), dtypes.int64)
        shape = array.concat([ids.dense_shape[:-1], array.reshape(size, [1])], 0)
        known, vocab = constant_value(ids.dense_shape), constant_value(vocab_size)
        if known is not None and vocab is not None:
            shape = np.concatenate([np.asarray(known[:-1], np.int64), [int(vocab)]])
        merged = SparseTensor(indices, values.values, shape)
        return merged if already_sorted else sparse_reorder(merged)


def sparse_to_indicator(sp_input, vocab_size, name: Optional[str] = None) -> Tensor:
    """A dense bool tensor one rank up: true at column ``v`` of each row holding ``v``."""
    sp = as_sparse(sp_input, "sp_input")
    graph = graph_for([sp.values])
    with graph.as_default(), graph.atomic(), name_scope(name, "SparseToIndicator",
                                                        [sp.values]) as scope:
        flags = array.fill(array.shape(sp.values), True)
        merged = sparse_merge(sp, SparseTensor(sp.indices, flags, sp.dense_shape),
                              vocab_size, name="SparseMerge")
        return sparse_tensor_to_dense(merged, default_value=False, validate_indices=False,
                                      name=scope)


def from_dense(tensor, name: Optional[str] = None) -> SparseTensor:
    """The non-zero elements of a dense tensor as a SparseTensor."""
    with name_scope(name, "dense_to_sparse", [tensor]):
        dense = convert_to_tensor(tensor)
        indices = math_ops.where(math_ops.not_equal(dense, array.zeros_like(dense)))
        values = array.gather_nd(dense, indices)
        return SparseTensor(indices, values, array.shape(dense, out_type=dtypes.int64))


def sparse_eye(num_rows, num_columns=None, dtype=dtypes.float32,
               name: Optional[str] = None) -> SparseTensor:
    """A sparse identity matrix of ``num_rows`` x ``num_columns`` (square by default)."""
    with name_scope(name, "eye", [num_rows, num_columns]):
        rows = convert_to_tensor(num_rows, dtype=dtypes.int64, name="num_rows")
        columns = rows if num_columns is None else \
            convert_to_tensor(num_columns, dtype=dtypes.int64, name="num_columns")
        diagonal = math_ops.range(math_ops.minimum(rows, columns))
        indices = array.stack([diagonal, diagonal], axis=1)
        values = array.ones(array.shape(diagonal), dtype=dtype)
        return SparseTensor(indices, values, array.stack([rows, columns]))


def sparse_expand_dims(sp_input, axis=None, name: Optional[str] = None) -> SparseTensor:
    """The SparseTensor with a new dimension of size 1 at ``axis``."""
    sp = as_sparse(sp_input, "sp_input")
    rank = sp.shape.ndims
    if axis is None or rank is None:
        raise ValueError("sparse expand_dims needs an axis and a SparseTensor of known rank")
    at = int(axis) + rank + 1 if int(axis) < 0 else int(axis)
    if not 0 <= at <= rank:
        raise ValueError(f"axis {axis} is out of range for a SparseTensor of rank {rank}")
    graph = graph_for([sp.values])
    with graph.as_default(), graph.atomic(), name_scope(name, "expand_dims", [sp.values]):
        zeros = array.zeros_like(sp.indices[:, :1])
        indices = array.concat([sp.indices[:, :at], zeros, sp.indices[:, at:]], 1)
        one = np.ones(1, np.int64)
        shape = array.concat([sp.dense_shape[:at], one, sp.dense_shape[at:]], 0)
        known = constant_value(sp.dense_shape)
        if known is not None:
            shape = np.insert(np.asarray(known, np.int64), at, 1)
        return SparseTensor(indices, sp.values, shape)
