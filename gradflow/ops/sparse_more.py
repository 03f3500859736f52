"""More SparseTensor ops, as TF1 has them (primitives under TF's op types): reorder,
reshape, slice, split, concat, softmax and elementwise maximum/minimum. The row-wise ops
and compositions are in ``sparse_rows``.

Gradients follow TF: values get gradients through ``SparseReorder``, ``SparseSlice``
(``SparseSliceGrad``) and ``SparseSoftmax``; ops TF defines none for raise TF's
LookupError when a gradient is asked of them, ``SparseConcat`` is not differentiable.
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from gradflow.framework import dtypes, errors
from gradflow.framework.constant import constant_value, convert_to_tensor
from gradflow.framework.graph import Tensor, name_scope
from gradflow.framework.registry import NotDifferentiable, RegisterGradient, define_op
from gradflow.framework.sparse_tensor import SparseTensor
from gradflow.framework.tensor_shape import TensorShape
from gradflow.ops import array
from gradflow.ops import math as math_ops
from gradflow.ops.common import apply_op, check_dtype_in, graph_for, static_ints
from gradflow.ops.sparse_ops import as_sparse, sparse_reduce_sum

__all__ = ["sparse_reorder", "sparse_reshape", "sparse_slice", "sparse_split",
           "sparse_concat", "sparse_softmax", "sparse_maximum", "sparse_minimum"]

_INDEX_ROWS = TensorShape([None, None])


def _rank_of(sp: SparseTensor) -> Optional[int]:
    return sp.shape.ndims


def no_gradient(op, *grads):
    """TF defines no gradient here; asking for one is its LookupError."""
    raise LookupError(f"No gradient defined for operation'{op.name}' (op type: {op.type}). "
                      "In general every operation must have an associated "
                      "`@tf.RegisterGradient` for correct autodiff, which this op is lacking. "
                      "If you want to pretend this operation is a constant in your program, "
                      "you may insert `tf.stop_gradient`.")


def row_major_order(indices: np.ndarray) -> np.ndarray:
    """The permutation putting index rows in row-major (canonical) order."""
    if not indices.size:
        return np.arange(indices.shape[0])
    return np.lexsort(indices.T[::-1])


def row_groups(indices: np.ndarray, columns: int) -> tuple[np.ndarray, np.ndarray]:
    """Group ids of the index rows by their first ``columns`` columns (and the groups)."""
    keys = indices[:, :columns]
    if not len(keys):
        return np.zeros(0, dtype=np.int64), keys
    groups, inverse = np.unique(keys, axis=0, return_inverse=True)
    return inverse.reshape(-1), groups


# ---------------------------------------------------------------- SparseReorder
def _infer_reorder(inputs, attrs):
    indices, values, _ = inputs
    return [(dtypes.int64, indices.shape), (values.dtype, values.shape)]


def _reorder_kernel(indices, values, shape):
    order = row_major_order(indices)
    return np.ascontiguousarray(indices[order]), np.ascontiguousarray(values[order])


define_op("SparseReorder", infer=_infer_reorder, kernel=_reorder_kernel)


@RegisterGradient("SparseReorder")
def _reorder_grad(op, _indices_grad, values_grad):
    """The values' gradient, put back in the input order."""
    indices = op.inputs[0]
    count = array.shape(indices, out_type=dtypes.int64)[0]
    positions = array.reshape(math_ops.range(count), [-1])
    _, moved = apply_op("SparseReorder", [indices, math_ops.cast(positions, dtypes.int64),
                                          op.inputs[2]], name="SparseReorder")
    inverse = array.invert_permutation(moved)
    return None, array.gather(values_grad, inverse), None


def sparse_reorder(sp_input, name: Optional[str] = None) -> SparseTensor:
    """The same SparseTensor with its entries in row-major order."""
    sp = as_sparse(sp_input, "sp_input")
    graph = graph_for([sp.values])
    with graph.as_default(), graph.atomic():
        indices, values = apply_op("SparseReorder", [sp.indices, sp.values, sp.dense_shape],
                                   name=name or "SparseReorder")
        return SparseTensor(indices, values, _static_or(sp.dense_shape))


def _static_or(shape: Tensor):
    """A dense shape as a new constant when it is known (TF rebuilds it so), else itself."""
    known = constant_value(shape)
    return shape if known is None else np.asarray(known, dtype=np.int64)


# ---------------------------------------------------------------- SparseReshape
def _infer_reshape(inputs, attrs):
    indices, _, new_shape = inputs
    check_dtype_in(new_shape, (dtypes.int64,), "SparseReshape", "new_shape")
    length = new_shape.shape.as_list()[0] if new_shape.shape.ndims == 1 else None
    return [(dtypes.int64, TensorShape([indices.shape.as_list()[0]
                                        if indices.shape.ndims == 2 else None, length])),
            (dtypes.int64, TensorShape([length]))]


def _reshape_kernel(indices, shape, new_shape):
    shape = shape.astype(np.int64)
    target = new_shape.astype(np.int64).copy()
    total = int(np.prod(shape))
    unknown = np.flatnonzero(target == -1)
    if len(unknown) > 1:
        raise errors.InvalidArgumentError(None, None, "only one output dimension may be -1, "
                                          f"not both {unknown[0]} and {unknown[1]}")
    if len(unknown):
        known = int(np.prod(np.delete(target, unknown[0])))
        if known == 0 or total % known:
            raise errors.InvalidArgumentError(
                None, None, f"Input to reshape is a SparseTensor with {total} dense values, "
                f"but the requested shape requires a multiple of {known}.")
        target[unknown[0]] = total // known
    if int(np.prod(target)) != total:
        raise errors.InvalidArgumentError(
            None, None, f"Input to reshape is a tensor with {total} dense values, but the "
            f"requested shape has {int(np.prod(target))}.")
    flat = np.ravel_multi_index(tuple(indices.T), tuple(shape)) if indices.size else \
        np.zeros(indices.shape[0], dtype=np.int64)
    out = np.stack(np.unravel_index(flat, tuple(target)), axis=1) if indices.shape[0] else \
        np.zeros((0, len(target)), dtype=np.int64)
    return out.astype(np.int64), target


define_op("SparseReshape", infer=_infer_reshape, kernel=_reshape_kernel)
RegisterGradient("SparseReshape")(no_gradient)


def sparse_reshape(sp_input, shape, name: Optional[str] = None) -> SparseTensor:
    """The SparseTensor reshaped to ``shape`` (one entry may be -1), entries kept."""
    sp = as_sparse(sp_input, "sp_input")
    graph = graph_for([sp.values])
    with graph.as_default(), graph.atomic(), name_scope(name, "SparseReshape",
                                                        [sp.values]) as scope:
        new_shape = math_ops.cast(convert_to_tensor(shape, name="x"), dtypes.int64) \
            if not isinstance(shape, Tensor) or shape.dtype is not dtypes.int64 else shape
        indices, out_shape = apply_op("SparseReshape", [sp.indices, sp.dense_shape, new_shape],
                                      name=scope)
        known = constant_value(sp.dense_shape)
        wanted = constant_value(shape)
        if known is not None and wanted is not None:
            total, asked = int(np.prod(known)), int(np.prod(wanted))
            if -1 not in list(wanted) and total != asked:
                raise ValueError(f"Cannot reshape a tensor with {total} elements to shape "
                                 f"{[int(d) for d in wanted]} ({asked} elements).")
            try:
                out_shape = convert_to_tensor(_reshape_kernel(
                    np.zeros((0, len(known)), np.int64), known, wanted)[1], name="Const")
            except errors.InvalidArgumentError as err:
                raise ValueError(str(err)) from None
        return SparseTensor(indices, array.identity(sp.values), out_shape)


# ------------------------------------------------------------------ SparseSlice
def _infer_slice(inputs, attrs):
    indices, values, shape, _, _ = inputs
    rank = shape.shape.as_list()[0] if shape.shape.ndims == 1 else None
    return [(dtypes.int64, TensorShape([None, rank])), (values.dtype, TensorShape([None])),
            (dtypes.int64, TensorShape([rank]))]


def _slice_kernel(indices, values, shape, start, size):
    start, size, shape = (np.asarray(v, dtype=np.int64) for v in (start, size, shape))
    end = np.minimum(start + size, shape)
    inside = np.all((indices >= start) & (indices < end), axis=1) if indices.size else \
        np.zeros(indices.shape[0], dtype=bool)
    out_shape = np.maximum(end - start, 0)
    return (np.ascontiguousarray(indices[inside] - start), values[inside],
            out_shape.astype(np.int64))


def _slice_grad_kernel(grad, input_indices, start, output_indices):
    wanted = {tuple(row): i for i, row in enumerate(output_indices + start)}
    out = np.zeros(input_indices.shape[0], dtype=grad.dtype)
    for i, row in enumerate(input_indices):
        at = wanted.get(tuple(row))
        if at is not None:
            out[i] = grad[at]
    return out


define_op("SparseSlice", infer=_infer_slice, kernel=_slice_kernel)
define_op("SparseSliceGrad", infer=lambda inputs, attrs: [
    (inputs[0].dtype, TensorShape([inputs[1].shape.as_list()[0]
                                   if inputs[1].shape.ndims == 2 else None]))],
    kernel=_slice_grad_kernel)
RegisterGradient("SparseSliceGrad")(no_gradient)


@RegisterGradient("SparseSlice")
def _slice_grad(op, _indices_grad, values_grad, _shape_grad):
    """Each sliced entry's gradient goes back to the input entry it came from."""
    indices, _, _, start, _ = op.inputs
    return (None, apply_op("SparseSliceGrad", [values_grad, indices, start, op.outputs[0]],
                           name="SparseSliceGrad"), None, None, None)


def sparse_slice(sp_input, start, size, name: Optional[str] = None) -> SparseTensor:
    """The entries inside the box ``[start, start + size)``, indices made relative to
    ``start`` (the box is clipped to the dense shape)."""
    sp = as_sparse(sp_input, "sp_input")
    graph = graph_for([sp.values])
    with graph.as_default(), graph.atomic():
        start_t = convert_to_tensor(start, dtype=dtypes.int64)
        size_t = convert_to_tensor(size, dtype=dtypes.int64)
        indices, values, shape = apply_op(
            "SparseSlice", [sp.indices, sp.values, sp.dense_shape, start_t, size_t],
            name=name or "SparseSlice")
        return SparseTensor(indices, values, shape)


# ------------------------------------------------------------------ SparseSplit
def _infer_split(inputs, attrs):
    _, indices, values, shape = inputs
    rank = shape.shape.as_list()[0] if shape.shape.ndims == 1 else None
    count = attrs["num_split"]
    return ([(dtypes.int64, TensorShape([None, rank]))] * count +
            [(values.dtype, TensorShape([None]))] * count +
            [(dtypes.int64, TensorShape([rank]))] * count)


def _split_kernel(split_dim, indices, values, shape, *, num_split):
    rank = len(shape)
    dim = int(split_dim) % rank if -rank <= int(split_dim) < rank else None
    if dim is None:
        raise errors.InvalidArgumentError(
            None, None, f"Input split_dim should be between -{rank} and {rank}, got "
            f"{int(split_dim)}")
    size = int(shape[dim])
    if num_split > size:
        raise errors.InvalidArgumentError(
            None, None, f"Input num_split should be between 1 and the splitting dimension "
            f"size ({size}), got {num_split}")
    pieces = [size // num_split + (1 if i < size % num_split else 0) for i in range(num_split)]
    bounds = np.concatenate([[0], np.cumsum(pieces)])
    out_indices, out_values, out_shapes = [], [], []
    for k in range(num_split):
        start = np.zeros(rank, np.int64)
        start[dim] = bounds[k]
        box = np.asarray(shape, np.int64).copy()
        box[dim] = pieces[k]
        i, v, s = _slice_kernel(indices, values, shape, start, box)
        out_indices.append(i)
        out_values.append(v)
        out_shapes.append(s)
    return tuple(out_indices + out_values + out_shapes)


define_op("SparseSplit", infer=_infer_split, kernel=_split_kernel)
RegisterGradient("SparseSplit")(no_gradient)


def sparse_split(keyword_required=None, sp_input=None, num_split: Optional[int] = None,
                 axis=None, name: Optional[str] = None, split_dim=None) -> list:
    """``num_split`` SparseTensors splitting ``sp_input`` along ``axis`` (the first
    pieces one longer when the size does not divide)."""
    if keyword_required is not None:
        raise ValueError("Keyword arguments are required for this function.")
    if sp_input is None:
        raise ValueError("sp_input is required")
    if num_split is None:
        raise ValueError("num_split is required")
    if axis is not None and split_dim is not None:
        raise ValueError("Cannot specify both 'axis' and 'split_dim'.")
    axis = axis if axis is not None else split_dim
    if axis is None:
        raise ValueError("axis is required")
    sp = as_sparse(sp_input, "sp_input")
    graph = graph_for([sp.values])
    with graph.as_default(), graph.atomic(), name_scope(name, "SparseSplit",
                                                        [sp.values]) as scope:
        dim = convert_to_tensor(axis, dtype=dtypes.int64, name="split_dim")
        outputs = apply_op("SparseSplit", [dim, sp.indices, sp.values, sp.dense_shape],
                           name=scope, num_split=int(num_split))
        if isinstance(outputs, Tensor):
            outputs = [outputs]
        n = int(num_split)
        return [SparseTensor(outputs[k], outputs[n + k], outputs[2 * n + k])
                for k in range(n)]


# ----------------------------------------------------------------- SparseConcat
def _infer_concat(inputs, attrs):
    n = attrs["N"]
    values = inputs[n:2 * n]
    shapes = [static_ints(s) for s in inputs[2 * n:]]
    total = None
    count = None
    sizes = [v.shape.as_list()[0] if v.shape.ndims == 1 else None for v in values]
    if None not in sizes:
        count = sum(sizes)
    rank = None if shapes[0] is None else len(shapes[0])
    if None not in shapes:
        dim = attrs["concat_dim"] % len(shapes[0])
        total = list(shapes[0])
        total[dim] = sum(s[dim] for s in shapes)
    return [(dtypes.int64, TensorShape([count, rank])), (values[0].dtype, TensorShape([count])),
            (dtypes.int64, TensorShape([rank]))]


def _concat_kernel(*arrays, concat_dim, N):
    indices, values, shapes = arrays[:N], arrays[N:2 * N], arrays[2 * N:]
    rank = len(shapes[0])
    dim = concat_dim % rank
    offset = 0
    moved = []
    for idx, shape in zip(indices, shapes, strict=True):
        shifted = np.array(idx, dtype=np.int64, copy=True)
        shifted[:, dim] += offset
        offset += int(shape[dim])
        moved.append(shifted)
    all_indices = np.concatenate(moved) if moved else np.zeros((0, rank), np.int64)
    all_values = np.concatenate(values)
    order = row_major_order(all_indices)
    out_shape = np.asarray(shapes[0], dtype=np.int64).copy()
    out_shape[dim] = offset
    return np.ascontiguousarray(all_indices[order]), all_values[order], out_shape


define_op("SparseConcat", infer=_infer_concat, kernel=_concat_kernel)
NotDifferentiable("SparseConcat")


def sparse_concat(axis, sp_inputs: Sequence, name: Optional[str] = None,
                  expand_nonconcat_dim: bool = False, concat_dim=None,
                  expand_nonconcat_dims=None) -> SparseTensor:
    """The SparseTensors of ``sp_inputs`` joined along ``axis`` (with
    ``expand_nonconcat_dim``, the other dimensions grow to the largest input's)."""
    if concat_dim is not None:
        if axis is not None and axis != concat_dim:
            raise ValueError("Cannot specify both 'axis' and 'concat_dim'.")
        axis = concat_dim
    if expand_nonconcat_dims is not None:
        expand_nonconcat_dim = expand_nonconcat_dims
    inputs = [as_sparse(s, "sp_inputs") for s in sp_inputs]
    if not inputs:
        raise ValueError("sp_inputs must not be empty")
    graph = graph_for([s.values for s in inputs])
    with graph.as_default(), graph.atomic():
        shapes = [s.dense_shape for s in inputs]
        known = [constant_value(s) for s in shapes]
        if expand_nonconcat_dim and all(k is not None for k in known):
            largest = np.max(np.stack(known), axis=0)
            dim = int(axis) % len(largest)
            shapes = [np.where(np.arange(len(k)) == dim, k, largest).astype(np.int64)
                      for k in known]
            shapes = [convert_to_tensor(s) for s in shapes]
        elif expand_nonconcat_dim:
            rank = _rank_of(inputs[0])
            if rank is None:
                raise ValueError("sparse_concat with expand_nonconcat_dim needs inputs of "
                                 "known rank")
            largest = math_ops.reduce_max(array.stack(shapes), axis=0)
            keep = np.arange(rank) == int(axis) % rank
            shapes = [math_ops.select_v2(keep, s, largest) for s in shapes]
        indices, values, shape = apply_op(
            "SparseConcat", [s.indices for s in inputs] + [s.values for s in inputs] + shapes,
            name=name or "SparseConcat", concat_dim=int(axis), N=len(inputs))
        known = [constant_value(s) for s in shapes]
        if all(k is not None for k in known):
            dim = int(axis) % len(known[0])
            total = np.asarray(known[0], np.int64).copy()
            total[dim] = sum(int(k[dim]) for k in known)
            shape = total
        return SparseTensor(indices, values, shape)


# ---------------------------------------------------------------- SparseSoftmax
def _softmax_kernel(indices, values, shape):
    groups, _ = row_groups(indices, indices.shape[1] - 1)
    wide = values.astype(np.float64)
    top = np.full(groups.max() + 1 if groups.size else 0, -np.inf)
    np.maximum.at(top, groups, wide)
    shifted = np.exp(wide - top[groups])
    total = np.zeros_like(top)
    np.add.at(total, groups, shifted)
    return (shifted / total[groups]).astype(values.dtype)


define_op("SparseSoftmax", infer=lambda inputs, attrs: [(inputs[1].dtype, inputs[1].shape)],
          kernel=_softmax_kernel)


@RegisterGradient("SparseSoftmax")
def _softmax_grad(op, grad):
    """(g - sum over the row of g * y) * y, the softmax Jacobian on each row."""
    indices, _, shape = op.inputs
    y = op.outputs[0]
    row_sums = sparse_reduce_sum(SparseTensor(indices, grad * y, shape), axis=-1,
                                 keepdims=True)
    leading = array.concat([indices[:, :-1], array.zeros_like(indices[:, -1:])], 1)
    return None, (grad - array.gather_nd(row_sums, leading)) * y, None


def sparse_softmax(sp_input, name: Optional[str] = None) -> SparseTensor:
    """Softmax over the entries of each innermost row (missing entries take no part)."""
    sp = as_sparse(sp_input, "sp_input")
    graph = graph_for([sp.values])
    with graph.as_default(), graph.atomic(), name_scope(name, "SparseSoftmax",
                                                        [sp.values]):
        values = apply_op("SparseSoftmax", [sp.indices, sp.values, sp.dense_shape],
                          name="SparseSoftmax")
        return SparseTensor(sp.indices, values, sp.dense_shape)


# ------------------------------------------------------- SparseSparseMaximum/Min
def _elementwise_kernel(combine):
    def kernel(a_indices, a_values, a_shape, b_indices, b_values, b_shape):
        if len(a_shape) != len(b_shape) or np.any(a_shape != b_shape):
            dim = next((d for d in range(min(len(a_shape), len(b_shape)))
                        if a_shape[d] != b_shape[d]), 0)
            raise errors.InvalidArgumentError(
                None, None, f"Operands' shapes do not match: got {int(a_shape[dim])} and "
                f"{int(b_shape[dim])} for dimension {dim}")
        # TF's merge walk over the two entry lists (each assumed in row-major order)
        zero = np.zeros((), a_values.dtype)
        indices, values = [], []
        i = j = 0
        while i < len(a_indices) or j < len(b_indices):
            a_key = tuple(a_indices[i]) if i < len(a_indices) else None
            b_key = tuple(b_indices[j]) if j < len(b_indices) else None
            if b_key is None or (a_key is not None and a_key < b_key):
                indices.append(a_key)
                values.append(combine(a_values[i], zero))
                i += 1
            elif a_key is None or b_key < a_key:
                indices.append(b_key)
                values.append(combine(zero, b_values[j]))
                j += 1
            else:
                indices.append(a_key)
                values.append(combine(a_values[i], b_values[j]))
                i += 1
                j += 1
        return (np.asarray(indices, dtype=np.int64).reshape(-1, len(a_shape)),
                np.asarray(values, dtype=a_values.dtype))
    return kernel


def _infer_elementwise(inputs, attrs):
    return [(dtypes.int64, _INDEX_ROWS), (inputs[1].dtype, TensorShape([None]))]


define_op("SparseSparseMaximum", infer=_infer_elementwise,
          kernel=_elementwise_kernel(np.maximum))
define_op("SparseSparseMinimum", infer=_infer_elementwise,
          kernel=_elementwise_kernel(np.minimum))
RegisterGradient("SparseSparseMaximum")(no_gradient)
RegisterGradient("SparseSparseMinimum")(no_gradient)


def _elementwise(op_type: str, sp_a, sp_b, name: Optional[str]) -> SparseTensor:
    a, b = as_sparse(sp_a, "sp_a"), as_sparse(sp_b, "sp_b")
    if a.dtype is not b.dtype:
        raise TypeError(f"Input 'b_values' of '{op_type}' Op has type {b.dtype.name} that "
                        f"does not match type {a.dtype.name} of argument 'a_values'.")
    graph = graph_for([a.values, b.values])
    with graph.as_default(), graph.atomic():
        indices, values = apply_op(op_type, [a.indices, a.values, a.dense_shape, b.indices,
                                             b.values, b.dense_shape], name=name or op_type)
        return SparseTensor(indices, values, a.dense_shape)


def sparse_maximum(sp_a, sp_b, name: Optional[str] = None) -> SparseTensor:
    """The elementwise maximum of two SparseTensors (missing entries count as 0)."""
    return _elementwise("SparseSparseMaximum", sp_a, sp_b, name)


def sparse_minimum(sp_a, sp_b, name: Optional[str] = None) -> SparseTensor:
    """The elementwise minimum of two SparseTensors (missing entries count as 0)."""
    return _elementwise("SparseSparseMinimum", sp_a, sp_b, name)
