"""Sparse ops: make, densify, reduce, multiply and add ``SparseTensor``s, as TF1 has them.

Each op is defined once: inference, kernel, gradient, constructor. Gradients flow to
the ``values`` of a sparse operand (and to dense operands); indices and shapes are
integers and get none.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from gradflow.framework import dtypes, errors
from gradflow.framework.constant import constant, convert_to_tensor
from gradflow.framework.graph import Tensor, get_default_graph, name_scope
from gradflow.framework.registry import NotDifferentiable, RegisterGradient, define_op
from gradflow.framework.sparse_tensor import SparseTensor, SparseTensorValue
from gradflow.framework.tensor_shape import TensorShape, as_shape
from gradflow.ops import array
from gradflow.ops import math as math_ops
from gradflow.ops.common import (NUMERIC, REAL_NUMERIC, apply_op, check_dtype_in, graph_for,
                                 static_ints)

__all__ = ["sparse_placeholder", "sparse_tensor_to_dense", "sparse_to_dense",
           "sparse_reduce_sum", "sparse_tensor_dense_matmul", "sparse_add",
           "sparse_dense_matmul"]

_INDEX_TYPES = (dtypes.int32, dtypes.int64)


# ------------------------------------------------------------------------ helpers
def reduction_args(axis, keepdims, reduction_axes, keep_dims) -> tuple:
    """``(axis, keepdims)`` of a sparse reduction from TF1's two spellings of each."""
    if reduction_axes is not None and axis is not None:
        raise ValueError("Cannot specify both 'axis' and 'reduction_axes'")
    if keepdims is not None and keep_dims is not None:
        raise ValueError("Cannot specify both 'keepdims' and 'keep_dims'")
    return (axis if axis is not None else reduction_axes,
            bool(keepdims if keepdims is not None else keep_dims))


def as_sparse(value, arg: str) -> SparseTensor:
    """``value`` as a SparseTensor (a SparseTensorValue becomes constants)."""
    if isinstance(value, SparseTensor):
        return value
    if isinstance(value, SparseTensorValue):
        return SparseTensor.from_value(value)
    raise TypeError(f"Input must be a SparseTensor: {arg} is a {type(value).__name__}")


def _shape_from(shape_t: Tensor) -> TensorShape:
    """The static shape a 1-D shape tensor holds (entries < 0 or unknown are None); a
    placeholder's default says nothing, since a feed may replace it."""
    known = static_ints(shape_t)
    if known is not None:
        return TensorShape([d if d >= 0 else None for d in known])
    if shape_t.shape.ndims == 1 and shape_t.shape.as_tuple()[0] is not None:
        return TensorShape([None] * shape_t.shape.as_tuple()[0])
    return TensorShape(None)


def _check_vector(t: Tensor, what: str, op_type: str) -> None:
    if t.shape.ndims not in (None, 1):
        raise ValueError(f"Shape must be rank 1 but is rank {t.shape.ndims} for '{op_type}' "
                         f"({what}: {t.name} with shape {t.shape})")


def _check_matrix(t: Tensor, what: str, op_type: str) -> None:
    if t.shape.ndims not in (None, 2):
        raise ValueError(f"Shape must be rank 2 but is rank {t.shape.ndims} for '{op_type}' "
                         f"({what}: {t.name} with shape {t.shape})")


def _invalid(message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, message)


def _check_indices(indices: np.ndarray, shape: tuple, ordered: bool) -> None:
    """TF's index validation: in bounds and (when ``ordered``) strictly increasing."""
    bounds = ",".join(str(d) for d in shape)
    for i, index in enumerate(indices):
        if np.any(index < 0) or np.any(index >= np.asarray(shape, dtype=np.int64)):
            where = ",".join(str(int(v)) for v in index)
            raise _invalid(f"indices[{i}] = [{where}] is out of bounds: need 0 <= index < "
                           f"[{bounds}]")
        if ordered and i:
            previous = tuple(int(v) for v in indices[i - 1])
            current = tuple(int(v) for v in index)
            where = ",".join(str(v) for v in current)
            if current == previous:
                raise _invalid(f"indices[{i}] = [{where}] is repeated")
            if current < previous:
                raise _invalid(f"indices[{i}] = [{where}] is out of order. Many sparse ops "
                               "require sorted indices.\n    Use `tf.sparse.reorder` to "
                               "create a correctly ordered copy.\n\n")


def _densify(indices: np.ndarray, values: np.ndarray, shape, default) -> np.ndarray:
    """A dense array of ``shape`` filled with ``default``, ``values`` at ``indices``."""
    out = np.full(tuple(int(d) for d in shape), default, dtype=values.dtype)
    if indices.size:
        out[tuple(indices.T)] = values
    return out


def _index_matrix(indices: np.ndarray) -> np.ndarray:
    """SparseToDense's indices (a scalar, a vector of rank-1 indices or a matrix) as [N, R]."""
    if indices.ndim == 0:
        return indices.reshape(1, 1)
    if indices.ndim == 1:
        return indices.reshape(-1, 1)
    return indices


# -------------------------------------------------------------------- SparseToDense
def _infer_sparse_to_dense(inputs, attrs):
    indices, shape_t, values, default = inputs
    check_dtype_in(indices, _INDEX_TYPES, "SparseToDense", "sparse_indices")
    check_dtype_in(shape_t, _INDEX_TYPES, "SparseToDense", "output_shape")
    if indices.shape.ndims is not None and indices.shape.ndims > 2:
        raise ValueError(f"sparse_indices should be a scalar, vector, or matrix, got "
                         f"{indices.name} with shape {indices.shape}")
    if shape_t.shape.ndims not in (None, 0, 1):
        raise ValueError(f"output_shape should be a scalar or vector, got {shape_t.name} "
                         f"with shape {shape_t.shape}")
    if values.shape.ndims not in (None, 0, 1):
        raise ValueError(f"sparse_values should be a scalar or vector, got {values.name} "
                         f"with shape {values.shape}")
    if default.shape.ndims not in (None, 0):
        raise ValueError(f"default_value should be a scalar, got {default.name} with shape "
                         f"{default.shape}")
    if default.dtype is not values.dtype:
        raise TypeError(f"Input 'default_value' of 'SparseToDense' Op has type "
                        f"{default.dtype.name} that does not match type {values.dtype.name} "
                        f"of argument 'sparse_values'.")
    shape = _shape_from(shape_t) if shape_t.shape.ndims != 0 else TensorShape(
        [None if static_ints(shape_t) is None else static_ints(shape_t)[0]])
    return [(values.dtype, shape)]


def _sparse_to_dense_kernel(indices, shape, values, default, *, validate_indices):
    matrix = _index_matrix(indices).astype(np.int64)
    dims = tuple(int(d) for d in np.reshape(shape, -1))
    if matrix.shape[1] != len(dims):
        raise _invalid(f"sparse_indices[0].size ({matrix.shape[1]}) should match the rank "
                       f"of output_shape ({len(dims)})")
    flat = np.broadcast_to(values, (matrix.shape[0],)) if values.ndim == 0 else values
    if flat.shape[0] != matrix.shape[0]:
        raise _invalid(f"sparse_values has incorrect shape [{values.shape[0]}], should be "
                       f"[] or [{matrix.shape[0]}]")
    if validate_indices:
        _check_indices(matrix, dims, ordered=True)
    else:
        _check_indices(matrix, dims, ordered=False)
    return _densify(matrix, flat, dims, default)


define_op("SparseToDense", infer=_infer_sparse_to_dense, kernel=_sparse_to_dense_kernel)


@RegisterGradient("SparseToDense")
def _sparse_to_dense_grad(op, grad):
    """Each value receives the gradient at its position; the default all the rest."""
    indices, _, values, _ = op.inputs
    matrix = indices if indices.shape.ndims == 2 else array.reshape(indices, [-1, 1])
    at_values = array.gather_nd(grad, matrix)
    values_grad = math_ops.reduce_sum(at_values) if values.shape.ndims == 0 else at_values
    default_grad = math_ops.reduce_sum(grad) - math_ops.reduce_sum(at_values)
    return None, None, values_grad, default_grad


def _sparse_to_dense_op(indices: Tensor, shape: Tensor, values: Tensor, default: Tensor,
                        validate_indices: bool, name) -> Tensor:
    return apply_op("SparseToDense", [indices, shape, values, default], name=name,
                    validate_indices=bool(validate_indices))


def sparse_to_dense(sparse_indices, output_shape, sparse_values, default_value=0,
                    validate_indices: bool = True, name: Optional[str] = None) -> Tensor:
    """A dense tensor of ``output_shape``: ``sparse_values`` at ``sparse_indices``,
    ``default_value`` elsewhere (TF1's deprecated spelling of ``sparse.to_dense``)."""
    parts = [sparse_indices, output_shape, sparse_values, default_value]
    graph = graph_for(parts)
    with graph.as_default(), graph.atomic(), graph.name_scope(name or "SparseToDense") as scope:
        indices = convert_to_tensor(sparse_indices, name="sparse_indices")
        shape = convert_to_tensor(output_shape, name="output_shape",
                                  dtype=None if isinstance(output_shape, Tensor)
                                  else indices.dtype)
        values = convert_to_tensor(sparse_values, name="sparse_values")
        default = convert_to_tensor(default_value, name="default_value", dtype=values.dtype)
        return _sparse_to_dense_op(indices, shape, values, default, validate_indices, scope)


def sparse_tensor_to_dense(sp_input, default_value=None, validate_indices: bool = True,
                           name: Optional[str] = None) -> Tensor:
    """The dense tensor ``sp_input`` stands for (``default_value``, 0 by default, where it
    has no entry)."""
    sp = as_sparse(sp_input, "sp_input")
    graph = graph_for([sp.values])
    with graph.as_default(), graph.atomic():
        if default_value is None:
            zero = b"" if sp.dtype is dtypes.string else np.zeros((), sp.dtype.as_numpy_dtype)
            default = constant(zero, dtype=sp.dtype, name="zeros")
        else:
            default = convert_to_tensor(default_value, dtype=sp.dtype, name="default_value")
        return _sparse_to_dense_op(sp.indices, sp.dense_shape, sp.values, default,
                                   validate_indices, name or "SparseToDense")


# ------------------------------------------------------------------ SparseReduceSum
def _reduced_shape(shape: TensorShape, axes: Optional[list], keep_dims: bool) -> TensorShape:
    if shape.ndims is None or axes is None:
        return TensorShape(None)
    rank = shape.ndims
    for axis in axes:
        if not -rank <= axis < rank:
            raise ValueError(f"Invalid reduction dimension {axis} for input with {rank} "
                             "dimensions (sparse_reduce_sum)")
    reduced = {axis % rank for axis in axes}
    dims = shape.as_tuple()
    if keep_dims:
        return TensorShape([1 if i in reduced else d for i, d in enumerate(dims)])
    return TensorShape([d for i, d in enumerate(dims) if i not in reduced])


def _infer_sparse_reduce_sum(inputs, attrs):
    indices, values, shape_t, axes = inputs
    _check_matrix(indices, "input_indices", "SparseReduceSum")
    _check_vector(values, "input_values", "SparseReduceSum")
    _check_vector(shape_t, "input_shape", "SparseReduceSum")
    check_dtype_in(values, NUMERIC, "SparseReduceSum", "input_values")
    known_axes = static_ints(axes)
    return [(values.dtype, _reduced_shape(_shape_from(shape_t), known_axes,
                                          attrs["keep_dims"]))]


def _sparse_reduce_sum_kernel(indices, values, shape, axes, *, keep_dims):
    dense = _densify(indices, values, shape, 0)
    rank = dense.ndim
    for axis in np.reshape(axes, -1):
        if not -rank <= axis < rank:
            raise _invalid(f"Invalid reduction dimension {int(axis)}, for input with {rank} "
                           "dimensions.")
    reduced = tuple(sorted({int(a) % rank for a in np.reshape(axes, -1)}))
    return np.asarray(dense.sum(axis=reduced, keepdims=keep_dims), dtype=values.dtype)


define_op("SparseReduceSum", infer=_infer_sparse_reduce_sum, kernel=_sparse_reduce_sum_kernel)


@RegisterGradient("SparseReduceSum")
def _sparse_reduce_sum_grad(op, grad):
    """Each entry receives the gradient of the output element it was summed into."""
    indices, _, shape_t, axes = op.inputs
    rank = array.size(shape_t, out_type=dtypes.int64)
    normalized = math_ops.floormod(math_ops.cast(axes, dtypes.int64), rank)
    positions = array.reshape(math_ops.range(rank), [-1, 1])
    is_reduced = math_ops.reduce_any(
        math_ops.equal(positions, array.reshape(normalized, [1, -1])), axis=1)
    kept_shape = math_ops.select_v2(is_reduced, array.ones_like(shape_t), shape_t)
    spread = array.broadcast_to(array.reshape(grad, kept_shape), shape_t)
    return None, array.gather_nd(spread, indices), None, None


def sparse_reduce_sum(sp_input, axis=None, keepdims=None, reduction_axes=None,
                      keep_dims=None) -> Tensor:
    """Sums the dense tensor ``sp_input`` stands for over ``axis`` (all axes if None)."""
    axis, keep = reduction_args(axis, keepdims, reduction_axes, keep_dims)
    sp = as_sparse(sp_input, "sp_input")
    graph = graph_for([sp.values])
    with graph.as_default(), graph.atomic(), graph.name_scope("SparseReduceSum") as scope:
        if axis is None:
            rank = sp.shape.ndims
            if rank is None:
                raise ValueError("sparse_reduce_sum with axis=None needs a SparseTensor of "
                                 "known rank (sp_input)")
            axis = list(range(rank))
        axes = convert_to_tensor(axis, name="reduction_axes", dtype=None
                                 if isinstance(axis, Tensor) else dtypes.int32)
        return apply_op("SparseReduceSum", [sp.indices, sp.values, sp.dense_shape, axes],
                        name=scope, keep_dims=keep)


# ---------------------------------------------------------- SparseTensorDenseMatMul
def _infer_sparse_dense_matmul(inputs, attrs):
    indices, values, shape_t, b = inputs
    op_type = "SparseTensorDenseMatMul"
    _check_matrix(indices, "a_indices", op_type)
    _check_vector(values, "a_values", op_type)
    _check_vector(shape_t, "a_shape", op_type)
    _check_matrix(b, "b", op_type)
    # Complex operands would need conjugated gradients: real dtypes only.
    check_dtype_in(values, REAL_NUMERIC, op_type, "a_values")
    if values.dtype is not b.dtype:
        raise TypeError(f"Input 'b' of '{op_type}' Op has type {b.dtype.name} that does not "
                        f"match type {values.dtype.name} of argument 'a_values'.")
    a_shape = _shape_from(shape_t)
    if a_shape.ndims not in (None, 2):
        raise ValueError(f"Shape must be rank 2 but is rank {a_shape.ndims} for '{op_type}' "
                         f"(the SparseTensor a has dense shape {a_shape})")
    a_dims = a_shape.as_tuple() or (None, None)
    b_dims = b.shape.as_tuple() or (None, None)
    rows, inner = a_dims[::-1] if attrs["adjoint_a"] else a_dims
    b_inner, cols = b_dims[::-1] if attrs["adjoint_b"] else b_dims
    if inner is not None and b_inner is not None and inner != b_inner:
        raise ValueError(f"Dimensions must be equal, but are {inner} and {b_inner} for "
                         f"'{op_type}' (a has dense shape {a_shape}, b is {b.name} with shape "
                         f"{b.shape}; adjoint_a={attrs['adjoint_a']}, "
                         f"adjoint_b={attrs['adjoint_b']})")
    return [(b.dtype, TensorShape([rows, cols]))]


def _sparse_dense_matmul_kernel(indices, values, shape, b, *, adjoint_a, adjoint_b):
    rows, inner = (int(shape[1]), int(shape[0])) if adjoint_a else (int(shape[0]),
                                                                      int(shape[1]))
    right = b.T if adjoint_b else b
    if right.shape[0] != inner:
        raise _invalid(f"Cannot multiply A and B because inner dimension does not match: "
                       f"{inner} vs. {right.shape[0]}.  Did you forget a transpose?  "
                       f"Dimensions of A: [{int(shape[0])}, {int(shape[1])}).  Dimensions of "
                       f"B: {list(b.shape)}")
    _check_indices(indices, tuple(int(d) for d in shape), ordered=False)
    out = np.zeros((rows, right.shape[1]), dtype=b.dtype)
    row, col = (indices[:, 1], indices[:, 0]) if adjoint_a else (indices[:, 0], indices[:, 1])
    np.add.at(out, row, values[:, None] * right[col])
    return out


define_op("SparseTensorDenseMatMul", infer=_infer_sparse_dense_matmul,
          kernel=_sparse_dense_matmul_kernel)


@RegisterGradient("SparseTensorDenseMatMul")
def _sparse_dense_matmul_grad(op, grad):
    """d values: the row of grad times the row of B each entry pairs; d B: A^T grad."""
    indices, values, shape_t, b = op.inputs
    adjoint_a, adjoint_b = op.get_attr("adjoint_a"), op.get_attr("adjoint_b")
    product = apply_op("SparseTensorDenseMatMul", [indices, values, shape_t, grad],
                       adjoint_a=not adjoint_a, adjoint_b=False)
    b_grad = array.transpose(product) if adjoint_b else product
    right = array.transpose(b) if adjoint_b else b
    rows, cols = array.unstack(indices, num=2, axis=1)
    if adjoint_a:
        rows, cols = cols, rows
    values_grad = math_ops.reduce_sum(array.gather(grad, rows) * array.gather(right, cols),
                                      axis=1)
    return None, values_grad, None, b_grad


def sparse_tensor_dense_matmul(sp_a, b, adjoint_a: bool = False, adjoint_b: bool = False,
                               name: Optional[str] = None) -> Tensor:
    """``op(A) @ op(B)`` for a rank-2 SparseTensor A and a dense matrix B (op: optional
    adjoint)."""
    sp = as_sparse(sp_a, "sp_a")
    graph = graph_for([sp.values, b])
    with graph.as_default(), graph.atomic(), \
            name_scope(name, "SparseTensorDenseMatMul", [sp.values, b]):
        b_t = convert_to_tensor(b, name="b")
        return apply_op("SparseTensorDenseMatMul", [sp.indices, sp.values, sp.dense_shape, b_t],
                        name="SparseTensorDenseMatMul", adjoint_a=bool(adjoint_a),
                        adjoint_b=bool(adjoint_b))


def sparse_dense_matmul(sp_a, b, adjoint_a: bool = False, adjoint_b: bool = False,
                        name: Optional[str] = None) -> Tensor:
    """``gf.sparse.sparse_dense_matmul``: ``sparse_tensor_dense_matmul`` (the dense
    operand may come first, as TF allows, when ``b`` is the SparseTensor)."""
    if isinstance(b, (SparseTensor, SparseTensorValue)) and \
            not isinstance(sp_a, (SparseTensor, SparseTensorValue)):
        graph = graph_for([b.values if isinstance(b, SparseTensor) else None])
        with graph.as_default(), graph.atomic():
            product = sparse_tensor_dense_matmul(b, sp_a, adjoint_a=not adjoint_b,
                                                 adjoint_b=not adjoint_a)
            return array.transpose(product, name=name)
    return sparse_tensor_dense_matmul(sp_a, b, adjoint_a, adjoint_b, name)



# --------------------------------------------------------------------- SparseAdd
def _infer_sparse_dense_add(inputs, attrs):
    indices, values, shape_t, b = inputs
    _check_matrix(indices, "a_indices", "SparseTensorDenseAdd")
    _check_vector(values, "a_values", "SparseTensorDenseAdd")
    if values.dtype is not b.dtype:
        raise TypeError(f"Input 'b' of 'SparseTensorDenseAdd' Op has type {b.dtype.name} that "
                        f"does not match type {values.dtype.name} of argument 'a_values'.")
    shape = _shape_from(shape_t)
    if not shape.is_compatible_with(b.shape):
        raise ValueError(f"Dimensions of the SparseTensor ({shape}) and the dense tensor "
                         f"{b.name} ({b.shape}) must match (SparseTensorDenseAdd)")
    return [(b.dtype, b.shape.merge_with(shape))]


def _sparse_dense_add_kernel(indices, values, shape, b):
    if tuple(int(d) for d in shape) != b.shape:
        raise _invalid(f"Dimension mismatch: the SparseTensor has shape "
                       f"{[int(d) for d in shape]} but b has shape {list(b.shape)}")
    _check_indices(indices, b.shape, ordered=False)
    out = b.copy()
    np.add.at(out, tuple(indices.T), values)
    return out


define_op("SparseTensorDenseAdd", infer=_infer_sparse_dense_add, kernel=_sparse_dense_add_kernel)


@RegisterGradient("SparseTensorDenseAdd")
def _sparse_dense_add_grad(op, grad):
    return None, array.gather_nd(grad, op.inputs[0]), None, grad


def _infer_sparse_add(inputs, attrs):
    a_indices, a_values, a_shape, b_indices, b_values, b_shape, threshold = inputs
    for t, what in ((a_indices, "a_indices"), (b_indices, "b_indices")):
        _check_matrix(t, what, "SparseAdd")
    if a_values.dtype is not b_values.dtype:
        raise TypeError(f"Input 'b_values' of 'SparseAdd' Op has type {b_values.dtype.name} "
                        f"that does not match type {a_values.dtype.name} of argument "
                        "'a_values'.")
    rank = a_indices.shape.as_tuple()[1] if a_indices.shape.ndims == 2 else None
    return [(dtypes.int64, TensorShape([None, rank])), (a_values.dtype, TensorShape([None])),
            (dtypes.int64, a_shape.shape)]


def _merged_entries(a_indices, b_indices):
    """The sorted union of two index sets, and where each input's entries land in it."""
    both = np.concatenate([a_indices, b_indices], axis=0)
    merged, where = np.unique(both, axis=0, return_inverse=True)
    where = where.reshape(-1)
    return merged.reshape(-1, a_indices.shape[1]), where[:len(a_indices)], where[len(a_indices):]


def _sparse_add_kernel(a_indices, a_values, a_shape, b_indices, b_values, b_shape, threshold):
    if not np.array_equal(a_shape, b_shape):
        raise _invalid(f"Operands' shapes do not match: A.shape = {list(a_shape)} vs. "
                       f"B.shape = {list(b_shape)}")
    merged, a_at, b_at = _merged_entries(a_indices, b_indices)
    sums = np.zeros(len(merged), dtype=a_values.dtype)
    np.add.at(sums, a_at, a_values)
    np.add.at(sums, b_at, b_values)
    keep = np.abs(sums) >= threshold
    return merged[keep].astype(np.int64), sums[keep], np.asarray(a_shape, dtype=np.int64)


define_op("SparseAdd", infer=_infer_sparse_add, kernel=_sparse_add_kernel)


def _infer_sparse_add_grad(inputs, attrs):
    grad, a_indices, b_indices, _ = inputs
    return [(grad.dtype, TensorShape([a_indices.shape.as_tuple()[0]
                                      if a_indices.shape.ndims == 2 else None])),
            (grad.dtype, TensorShape([b_indices.shape.as_tuple()[0]
                                      if b_indices.shape.ndims == 2 else None]))]


def _sparse_add_grad_kernel(grad, a_indices, b_indices, sum_indices):
    """Each input entry's gradient is that of the output entry it went into (zero if the
    threshold dropped it)."""
    lookup = {tuple(int(v) for v in index): i for i, index in enumerate(sum_indices)}
    picked = []
    for indices in (a_indices, b_indices):
        rows = [lookup.get(tuple(int(v) for v in index), -1) for index in indices]
        rows = np.asarray(rows, dtype=np.int64)
        picked.append(np.where(rows >= 0, grad[np.maximum(rows, 0)] if len(grad) else 0,
                               0).astype(grad.dtype))
    return tuple(picked)


define_op("SparseAddGrad", infer=_infer_sparse_add_grad, kernel=_sparse_add_grad_kernel)
NotDifferentiable("SparseAddGrad")


@RegisterGradient("SparseAdd")
def _sparse_add_grad(op, *grads):
    a_indices, _, _, b_indices = op.inputs[:4]
    a_grad, b_grad = apply_op("SparseAddGrad", [grads[1], a_indices, b_indices,
                                                op.outputs[0]])
    return None, a_grad, None, None, b_grad, None, None


def sparse_add(a, b, threshold=0, thresh=None):
    """``a + b`` where at least one is a SparseTensor: a SparseTensor if both are (entries
    of magnitude below ``threshold`` dropped), else a dense tensor."""
    if thresh is not None:
        threshold = thresh
    a_sparse = isinstance(a, (SparseTensor, SparseTensorValue))
    b_sparse = isinstance(b, (SparseTensor, SparseTensorValue))
    if not (a_sparse or b_sparse):
        raise TypeError("At least one input should be SparseTensor; do you mean to use "
                        "tf.add?")
    if a_sparse and b_sparse:
        return _sparse_sparse_add(as_sparse(a, "a"), as_sparse(b, "b"), threshold)
    sp, dense = (as_sparse(a, "a"), b) if a_sparse else (as_sparse(b, "b"), a)
    graph = graph_for([sp.values, dense])
    with graph.as_default(), graph.atomic():
        dense_t = convert_to_tensor(dense, dtype=sp.dtype, name="b")
        return apply_op("SparseTensorDenseAdd", [sp.indices, sp.values, sp.dense_shape,
                                                 dense_t], name="SparseTensorDenseAdd")


def _sparse_sparse_add(a: SparseTensor, b: SparseTensor, threshold) -> SparseTensor:
    graph = graph_for([a.values, b.values])
    with graph.as_default(), graph.atomic():
        threshold_t = convert_to_tensor(threshold, name="threshold",
                                        dtype=math_ops.abs(a.values).dtype
                                        if a.dtype.is_complex else a.dtype)
        indices, values, shape = apply_op(
            "SparseAdd", [a.indices, a.values, a.dense_shape, b.indices, b.values,
                          b.dense_shape, threshold_t], name="SparseAdd")
        return SparseTensor(indices, values, shape)


# ---------------------------------------------------------------- placeholders
def sparse_placeholder(dtype, shape=None, name: Optional[str] = None) -> SparseTensor:
    """A SparseTensor to be fed (with a SparseTensorValue or an (indices, values,
    dense_shape) tuple). A given ``shape`` becomes the dense_shape's default."""
    graph = get_default_graph()
    dtype = dtypes.as_dtype(dtype)
    static = as_shape(shape) if shape is not None else None
    with graph.atomic():
        if static is None or static.ndims is None:
            rank = None
            dense_shape = array.placeholder(dtypes.int64, shape=[rank],
                                            name=f"{name}/shape" if name else None)
        else:
            rank = static.ndims
            default = constant(np.asarray([-1 if d is None else d for d in static.as_list()],
                                          dtype=np.int64),
                               name=f"{name}/shape_default" if name else "Const")
            dense_shape = array.placeholder_with_default(
                default, [rank], name=f"{name}/shape" if name else None)
        values = array.placeholder(dtype, shape=[None], name=f"{name}/values" if name else None)
        indices = array.placeholder(dtypes.int64, shape=[None, rank],
                                    name=f"{name}/indices" if name else None)
        return SparseTensor(indices, values, dense_shape)

