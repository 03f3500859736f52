"""Array ops: sources, shapes, reshaping, joining, slicing, gathering and diagonals.

Each op is defined once: its inference function and kernel via ``define_op``, its
gradient right after it, then its public constructor. Linear ops come in adjoint
pairs (Pad/Slice, StridedSlice/StridedSliceGrad, BooleanMask/BooleanMaskGrad, ...):
the gradient of each is the other, so derivatives of any order exist.
"""
from __future__ import annotations

import builtins
import collections
import warnings
from typing import Optional, Sequence

import numpy as np

from gradflow.framework import dtypes, errors
from gradflow.framework.constant import (constant, constant_value, convert_to_tensor,
                                         foldable, register_static_value,
                                         register_tensor_conversion_function)
from gradflow.framework.graph import Tensor, get_default_graph
from gradflow.framework.indexed_slices import LARGE_SPARSE_NUM_ELEMENTS, IndexedSlices
from gradflow.framework.registry import (NotDifferentiable, RegisterGradient, define_op,
                                         gradient_needed)
from gradflow.framework.tensor_shape import TensorShape, as_shape
from gradflow.ops.common import (FLOATING, NUMERIC, STATIC_LIST_LIMIT, apply_op, as_tensor,
                                 broadcast_shape, check_dtype_in, graph_for, same_as_input,
                                 static_ints)

__all__ = [
    "placeholder", "placeholder_with_default", "identity", "identity_n", "stop_gradient",
    "prevent_gradient", "fill", "zeros", "ones", "zeros_like", "ones_like", "shape", "shape_n",
    "size", "rank", "reshape", "expand_dims", "squeeze", "transpose", "concat", "split",
    "stack", "unstack", "tile", "pad", "reverse", "reverse_v2", "broadcast_to",
    "broadcast_gradient_args", "invert_permutation", "slice", "strided_slice", "gather",
    "gather_nd", "scatter_nd", "unsorted_segment_sum", "boolean_mask", "one_hot",
    "sequence_mask", "unique", "unique_with_counts", "linspace", "lin_space", "meshgrid",
    "diag", "diag_part", "matrix_diag", "matrix_diag_part", "matrix_set_diag",
    "matrix_band_part", "eye",
]

_INDEX_TYPES = (dtypes.int32, dtypes.int64)


# ------------------------------------------------------------------------ helpers
def _partial_ints(t: Tensor) -> Optional[list]:
    """The elements of a 1-D int tensor known at build time, None where unknown.

    Shape arithmetic is often partly known: ``reshape(x, [-1, n])`` for a tensor ``n``,
    the shape of a tensor with some static dimensions, a slice of it, or a concat of
    such pieces. None when even the length is unknown.
    """
    if t.op.type == "ConcatV2" and static_ints(t.op.inputs[-1]) == [0]:
        parts = [_piece_ints(piece) for piece in t.op.inputs[:-1]]
        return None if None in parts else [v for part in parts for v in part]
    return _piece_ints(t)


def _piece_ints(t: Tensor) -> Optional[list]:
    """``_partial_ints`` of a constant, a stack of scalars, a shape, or a slice of a shape."""
    values = static_ints(t)
    if values is not None:
        return values
    length = t.shape[0].value if t.shape.ndims == 1 else None
    if length is None or length > STATIC_LIST_LIMIT:
        return None
    op = t.op
    if op.type == "Pack" and len(op.inputs) == length:
        return [None if v is None else v[0] for v in map(static_ints, op.inputs)]
    if op.type == "Shape":
        return list(op.inputs[0].shape.as_tuple())
    if op.type == "StridedSlice" and op.inputs[0].op.type == "Shape":
        dims = op.inputs[0].op.inputs[0].shape.as_tuple()
        bounds = [static_ints(b) for b in op.inputs[1:]]
        if dims is not None and None not in bounds:
            return list(np.array(dims, dtype=object)[_index_tuple(*bounds, op.attrs)])
    return [None] * length


def _static_shape_of(t: Tensor) -> TensorShape:
    """A shape described by a 1-D int tensor, as far as it is known at build time."""
    values = _partial_ints(t)
    if values is None:
        return TensorShape(None)
    return TensorShape([None if v is None or v < 0 else v for v in values])


def _int_vector(values: Sequence[int], name: str = "Const") -> Tensor:
    """A 1-D int32 constant (also when ``values`` is empty)."""
    return constant(np.asarray(values, dtype=np.int32).reshape(-1), name=name)


def _stacked_ints(items: Sequence, name: str) -> Tensor:
    """Stacks ints and scalar int tensors into a 1-D tensor (int64 if any tensor is)."""
    from gradflow.ops.math import cast
    for item in items:
        if isinstance(item, Tensor) and item.dtype not in _INDEX_TYPES:
            raise TypeError(f"Shape and index entries must be int32 or int64, got "
                            f"{item.dtype.name} tensor {item.name}")
    wide = any(isinstance(d, Tensor) and d.dtype is dtypes.int64 for d in items)
    dtype = dtypes.int64 if wide else dtypes.int32
    return stack([cast(d, dtype) if isinstance(d, Tensor) else constant(d, dtype=dtype)
                  for d in items], name=name)


def _shape_tensor(shape_like, name: str = "shape") -> Tensor:
    """A 1-D int tensor from a shape given as a list (may hold tensors), TensorShape or tensor."""
    if isinstance(shape_like, Tensor):
        return shape_like
    if isinstance(shape_like, TensorShape):
        shape_like = shape_like.as_list()
    if isinstance(shape_like, (list, tuple)) and any(isinstance(d, Tensor) for d in shape_like):
        return _stacked_ints(shape_like, name)
    values = np.asarray(shape_like)
    wide = values.dtype.kind in "iu" and values.size and np.abs(values).max() >= 2 ** 31
    return constant(values.reshape(-1), dtype=dtypes.int64 if wide else dtypes.int32, name=name)


def _check_index_dtype(t: Tensor, op_type: str, arg: str) -> None:
    check_dtype_in(t, _INDEX_TYPES, op_type, arg)


def _check_rank(t: Tensor, ranks: Sequence[int], what: str) -> None:
    """ValueError unless ``t``'s rank (when known) is one of ``ranks``."""
    if t.shape.ndims is not None and t.shape.ndims not in ranks:
        wanted = " or ".join(str(r) for r in ranks)
        raise ValueError(f"{what} must have rank {wanted}, but {t.name} has shape {t.shape}")


def _normalized_axis(axis: int, ndims: int, what: str) -> int:
    """``axis`` in [0, ndims), accepting negative axes; ValueError when out of range."""
    if not -ndims <= axis < ndims:
        raise ValueError(f"{what}: axis {axis} is out of range [{-ndims}, {ndims}) for a "
                         f"tensor of rank {ndims}")
    return axis % ndims


def _foldable(op_type: str) -> None:
    """Lets build-time constant propagation evaluate small ``op_type`` ops.

    Shape arithmetic (``concat([[-1], shape(x)[1:]], 0)``...) then yields static shapes.
    """
    @register_static_value(op_type)
    def _fold(op):
        if not foldable(op):
            return None
        values = [constant_value(t) for t in op._inputs]
        if any(v is None for v in values):
            return None
        attrs = {k: v for k, v in op._attrs.items() if not k.startswith("_")}
        try:
            return np.asarray(op.op_def.kernel(*values, **attrs))
        except (ValueError, IndexError, errors.OpError):
            return None  # an invalid value is reported when the op runs


def _transposed(x: Tensor, perm: list) -> Tensor:
    """``transpose(x, perm)``, or ``x`` itself when ``perm`` is the identity."""
    return x if perm == list(range(len(perm))) else transpose(x, perm)


def _num_elements(dims: Tensor) -> Tensor:
    """How many elements a tensor of shape ``dims`` (1-D int tensor) has, as a scalar."""
    known = static_ints(dims)
    if known is not None:
        return constant(int(np.prod(known, dtype=np.int64)), dtype=dims.dtype)
    return size(fill(dims, constant(False)), out_type=dims.dtype)


# ------------------------------------------------------------------------- sources
def _infer_placeholder(inputs, attrs):
    return [(attrs["dtype"], attrs["shape"])]


define_op("Placeholder", infer=_infer_placeholder, kernel=None)
NotDifferentiable("Placeholder")


def placeholder(dtype, shape=None, name: Optional[str] = None) -> Tensor:
    """A tensor that must be fed: ``Session.run(..., feed_dict={p: value})``."""
    dtype = dtypes.as_dtype(dtype)
    graph = get_default_graph()
    op = graph.create_op("Placeholder", (), {"dtype": dtype, "shape": as_shape(shape)},
                         name=name or "Placeholder")
    return op.outputs[0]


def _infer_placeholder_with_default(inputs, attrs):
    default = inputs[0]
    shape = as_shape(attrs["shape"])
    if not shape.is_compatible_with(default.shape):
        raise ValueError(f"The default value of placeholder_with_default has shape "
                         f"{default.shape}, which is incompatible with shape {shape}")
    return [(default.dtype, shape)]


define_op("PlaceholderWithDefault", infer=_infer_placeholder_with_default,
          kernel=lambda x, *, shape: x)


@RegisterGradient("PlaceholderWithDefault")
def _placeholder_with_default_grad(op, grad):
    return grad


def placeholder_with_default(input, shape, name: Optional[str] = None) -> Tensor:  # noqa: A002
    """A tensor that takes ``input``'s value unless it is fed."""
    default = convert_to_tensor(input)
    return apply_op("PlaceholderWithDefault", [default], name=name or "PlaceholderWithDefault",
                    shape=as_shape(shape))


# ----------------------------------------------------------------- identity & co.
define_op("Identity", infer=same_as_input, kernel=lambda x: x)
_foldable("Identity")


@RegisterGradient("Identity")
def _identity_grad(op, grad):
    return grad


def identity(input, name: Optional[str] = None) -> Tensor:  # noqa: A002
    """Returns a tensor with the same value as ``input`` (a new op: useful as a handle)."""
    if isinstance(input, IndexedSlices):
        return IndexedSlices(identity(input.values, name=name), input.indices,
                             input.dense_shape)
    x = convert_to_tensor(input)
    return apply_op("Identity", [x], name=name or "Identity")


define_op("IdentityN", infer=lambda inputs, attrs: [(t.dtype, t.shape) for t in inputs],
          kernel=lambda *xs: xs if len(xs) != 1 else xs[0])


@RegisterGradient("IdentityN")
def _identity_n_grad(op, *grads):
    return list(grads)


def identity_n(input, name: Optional[str] = None) -> list[Tensor]:  # noqa: A002
    """Passes a list of tensors through one op (one dependency point for all of them)."""
    tensors = [convert_to_tensor(t) for t in input]
    if not tensors:
        raise ValueError("identity_n needs at least one tensor")
    result = apply_op("IdentityN", tensors, name=name or "IdentityN")
    return [result] if isinstance(result, Tensor) else list(result)


define_op("StopGradient", infer=same_as_input, kernel=lambda x: x)
NotDifferentiable("StopGradient")


def stop_gradient(input, name: Optional[str] = None) -> Tensor:  # noqa: A002
    """Passes ``input`` through; gradients treat the result as a constant."""
    return apply_op("StopGradient", [convert_to_tensor(input)], name=name or "StopGradient")


define_op("PreventGradient", infer=same_as_input, kernel=lambda x, *, message: x)


@RegisterGradient("PreventGradient")
def _prevent_gradient_grad(op, grad):
    raise LookupError(f"Gradient explicitly disabled. Reason: {op.get_attr('message')} "
                      f"(op '{op.name}')")


def prevent_gradient(input, message: str = "", name: Optional[str] = None) -> Tensor:  # noqa: A002
    """Passes ``input`` through; asking for a gradient through it raises LookupError."""
    return apply_op("PreventGradient", [convert_to_tensor(input)],
                    name=name or "PreventGradient", message=message)


# ------------------------------------------------------------- filled tensors
def _infer_fill(inputs, attrs):
    dims, value = inputs
    _check_index_dtype(dims, "Fill", "dims")
    _check_rank(dims, (1,), "dims of fill")
    if value.shape.ndims not in (None, 0):
        raise ValueError(f"value of fill must be a scalar, got shape {value.shape} "
                         f"({value.name})")
    shape_ = _static_shape_of(dims)
    if any(d is not None and d < 0 for d in (_partial_ints(dims) or ())):
        raise ValueError(f"dims of fill must be non-negative, got {_partial_ints(dims)}")
    return [(value.dtype, shape_)]


define_op("Fill", infer=_infer_fill,
          kernel=lambda dims, value: np.full(tuple(dims), value, dtype=value.dtype))
_foldable("Fill")


@RegisterGradient("Fill")
def _fill_grad(op, grad):
    from gradflow.ops.math import reduce_sum
    return None, reduce_sum(grad)


def fill(dims, value, name: Optional[str] = None) -> Tensor:
    """A tensor of shape ``dims`` filled with the scalar ``value``."""
    value = convert_to_tensor(value)
    return apply_op("Fill", [_shape_tensor(dims), value], name=name or "Fill")


def zeros(shape, dtype=dtypes.float32, name: Optional[str] = None) -> Tensor:
    """A tensor of ``shape`` filled with zeros."""
    dtype = dtypes.as_dtype(dtype)
    with get_default_graph().name_scope(name or "zeros"):
        return fill(shape, constant(0, dtype=dtype, name="Const"), name="zeros")


def ones(shape, dtype=dtypes.float32, name: Optional[str] = None) -> Tensor:
    """A tensor of ``shape`` filled with ones."""
    dtype = dtypes.as_dtype(dtype)
    with get_default_graph().name_scope(name or "ones"):
        return fill(shape, constant(1, dtype=dtype, name="Const"), name="ones")


define_op("ZerosLike", infer=same_as_input, kernel=np.zeros_like)
define_op("OnesLike", infer=same_as_input, kernel=np.ones_like)
NotDifferentiable("ZerosLike")
NotDifferentiable("OnesLike")


def zeros_like(tensor, dtype=None, name: Optional[str] = None, optimize: bool = True) -> Tensor:
    """Zeros shaped like ``tensor`` (of ``dtype``, default ``tensor``'s)."""
    tensor = convert_to_tensor(tensor)
    if dtype is not None and dtypes.as_dtype(dtype) is not tensor.dtype:
        return zeros(shape(tensor), dtype=dtype, name=name)
    return apply_op("ZerosLike", [tensor], name=name or "zeros_like")


def ones_like(tensor, dtype=None, name: Optional[str] = None, optimize: bool = True) -> Tensor:
    """Ones shaped like ``tensor`` (of ``dtype``, default ``tensor``'s)."""
    tensor = convert_to_tensor(tensor)
    if dtype is not None and dtypes.as_dtype(dtype) is not tensor.dtype:
        return ones(shape(tensor), dtype=dtype, name=name)
    return apply_op("OnesLike", [tensor], name=name or "ones_like")


# ------------------------------------------------------------------ shape queries
def _infer_shape(inputs, attrs):
    x = inputs[0]
    return [(attrs["out_type"], TensorShape([x.shape.ndims]))]


define_op("Shape", infer=_infer_shape,
          kernel=lambda x, *, out_type: np.asarray(np.shape(x), dtype=out_type.as_numpy_dtype))
NotDifferentiable("Shape")


@register_static_value("Shape")
def _shape_static(op):
    known = op.inputs[0].shape
    if not known.is_fully_defined():
        return None
    return np.asarray(known.as_list(), dtype=op.get_attr("out_type").as_numpy_dtype)


def _out_type(out_type) -> dtypes.DType:
    """The int dtype of a shape query (int32 when None, as in TF)."""
    dtype = dtypes.int32 if out_type is None else dtypes.as_dtype(out_type)
    if dtype not in _INDEX_TYPES:
        raise TypeError(f"out_type must be int32 or int64, got {dtype.name}")
    return dtype


def shape(input, name: Optional[str] = None, out_type=None) -> Tensor:  # noqa: A002
    """The dynamic shape of ``input`` as a 1-D int tensor."""
    x = convert_to_tensor(input)
    return apply_op("Shape", [x], name=name or "Shape", out_type=_out_type(out_type))


def shape_n(input, out_type=dtypes.int32, name: Optional[str] = None) -> list[Tensor]:  # noqa: A002
    """The shapes of a list of tensors."""
    with get_default_graph().name_scope(name or "ShapeN"):
        return [shape(x, out_type=out_type) for x in input]


define_op("Size", infer=lambda inputs, attrs: [(attrs["out_type"], TensorShape([]))],
          kernel=lambda x, *, out_type: np.asarray(np.size(x), dtype=out_type.as_numpy_dtype))
define_op("Rank", infer=lambda inputs, attrs: [(dtypes.int32, TensorShape([]))],
          kernel=lambda x: np.asarray(np.ndim(x), dtype=np.int32))
NotDifferentiable("Size")
NotDifferentiable("Rank")


@register_static_value("Size")
def _size_static(op):
    count = op.inputs[0].shape.num_elements()
    return None if count is None else np.asarray(count, op.get_attr("out_type").as_numpy_dtype)


@register_static_value("Rank")
def _rank_static(op):
    ndims = op.inputs[0].shape.ndims
    return None if ndims is None else np.asarray(ndims, np.int32)


def size(input, name: Optional[str] = None, out_type=None) -> Tensor:  # noqa: A002
    """The number of elements of ``input`` as a scalar int tensor."""
    return apply_op("Size", [convert_to_tensor(input)], name=name or "Size",
                    out_type=_out_type(out_type))


def rank(input, name: Optional[str] = None) -> Tensor:  # noqa: A002
    """The number of dimensions of ``input`` as a scalar int32 tensor."""
    return apply_op("Rank", [convert_to_tensor(input)], name=name or "Rank")


# ----------------------------------------------------------------------- reshape
def _infer_reshape(inputs, attrs):
    x, new_shape = inputs
    _check_index_dtype(new_shape, "Reshape", "shape")
    _check_rank(new_shape, (1,), "shape of reshape")
    target = _partial_ints(new_shape)
    if target is None:
        return [(x.dtype, TensorShape(None))]
    if target.count(-1) > 1:
        raise ValueError(f"Reshape of {x.name} to {target}: can only infer one dimension")
    if any(d is not None and d < -1 for d in target):
        raise ValueError(f"Reshape of {x.name}: sizes must be non-negative or -1, got {target}")
    count = x.shape.num_elements()
    if count is not None and None not in target:
        known = int(np.prod([d for d in target if d != -1], dtype=np.int64))
        if -1 in target:
            if known == 0 or count % known:
                raise ValueError(f"Cannot reshape a tensor with {count} elements to shape "
                                 f"{target} (input {x.name}, shape {x.shape})")
            target = [count // known if d == -1 else d for d in target]
        elif count != known:
            raise ValueError(f"Cannot reshape a tensor with {count} elements to shape "
                             f"{target} (input {x.name}, shape {x.shape})")
    return [(x.dtype, TensorShape([None if d is None or d < 0 else d for d in target]))]


define_op("Reshape", infer=_infer_reshape, kernel=lambda x, s: np.reshape(x, tuple(s)))
_foldable("Reshape")


@RegisterGradient("Reshape")
def _reshape_grad(op, grad):
    return reshape(grad, shape_of_input(op.inputs[0])), None


def shape_of_input(x: Tensor) -> Tensor:
    """``x``'s shape as a tensor: a constant when static (cheaper and foldable)."""
    if x.shape.is_fully_defined():
        return constant(np.asarray(x.shape.as_list(), dtype=np.int32), name="Shape")
    return shape(x)


def reshape(tensor, shape, name: Optional[str] = None) -> Tensor:  # noqa: F811 - TF arg name
    """``tensor``'s elements in a new shape; one entry of ``shape`` may be -1 (inferred)."""
    x = convert_to_tensor(tensor)
    return apply_op("Reshape", [x, _shape_tensor(shape)], name=name or "Reshape")


def _infer_expand_dims(inputs, attrs):
    x, axis = inputs
    _check_index_dtype(axis, "ExpandDims", "axis")
    if axis.shape.num_elements() not in (None, 1):
        raise ValueError(f"axis of expand_dims must be a scalar, got shape {axis.shape}")
    axes = static_ints(axis)
    dims = x.shape.as_tuple()
    if dims is None:
        return [(x.dtype, TensorShape(None))]
    if axes is None:
        return [(x.dtype, TensorShape([None] * (len(dims) + 1)))]
    a = axes[0]
    if not -len(dims) - 1 <= a <= len(dims):
        raise ValueError(f"dim {a} not in the interval [{-len(dims) - 1}, {len(dims)}] for "
                         f"expand_dims of {x.name} with shape {x.shape}")
    a %= len(dims) + 1
    return [(x.dtype, TensorShape.from_tuple(dims[:a] + (1,) + dims[a:]))]


define_op("ExpandDims", infer=_infer_expand_dims,
          kernel=lambda x, axis: np.expand_dims(x, int(np.asarray(axis).reshape(-1)[0])))
_foldable("ExpandDims")


@RegisterGradient("ExpandDims")
def _expand_dims_grad(op, grad):
    return reshape(grad, shape_of_input(op.inputs[0])), None


def expand_dims(input, axis=None, name: Optional[str] = None, dim=None) -> Tensor:  # noqa: A002
    """Inserts a dimension of size 1 at ``axis`` (``dim`` is the deprecated name)."""
    if axis is not None and dim is not None:
        raise ValueError("Cannot specify both 'axis' and 'dim'")
    axis = dim if axis is None else axis
    if axis is None:
        raise ValueError("Must specify an axis argument to gf.expand_dims()")
    x = convert_to_tensor(input)
    return apply_op("ExpandDims", [x, as_tensor(axis, dtype=None if isinstance(axis, Tensor)
                                                else dtypes.int32, like=x)],
                    name=name or "ExpandDims")


def _infer_squeeze(inputs, attrs):
    x = inputs[0]
    dims = x.shape.as_tuple()
    axes = attrs["squeeze_dims"]
    if dims is None:
        return [(x.dtype, TensorShape(None))]
    if axes:
        wanted = set()
        for a in axes:
            a = _normalized_axis(a, len(dims), f"squeeze of {x.name}")
            if dims[a] not in (1, None):
                raise ValueError(f"Can not squeeze dim[{a}], expected a dimension of 1, got "
                                 f"{dims[a]} for {x.name} with shape {x.shape}")
            wanted.add(a)
        return [(x.dtype, TensorShape.from_tuple(
            tuple(d for i, d in enumerate(dims) if i not in wanted)))]
    if None in dims:
        return [(x.dtype, TensorShape(None))]
    return [(x.dtype, TensorShape.from_tuple(tuple(d for d in dims if d != 1)))]


define_op("Squeeze", infer=_infer_squeeze,
          kernel=lambda x, *, squeeze_dims: np.squeeze(x, tuple(squeeze_dims) or None))
_foldable("Squeeze")


@RegisterGradient("Squeeze")
def _squeeze_grad(op, grad):
    return reshape(grad, shape_of_input(op.inputs[0]))


def squeeze(input, axis=None, name: Optional[str] = None, squeeze_dims=None) -> Tensor:  # noqa: A002
    """Removes dimensions of size 1 (only those in ``axis`` when given)."""
    if axis is not None and squeeze_dims is not None:
        raise ValueError("Cannot specify both 'axis' and 'squeeze_dims'")
    axis = squeeze_dims if axis is None else axis
    if axis is not None and np.ndim(axis) == 0:
        axis = [axis]
    return apply_op("Squeeze", [convert_to_tensor(input)], name=name or "Squeeze",
                    squeeze_dims=tuple(int(a) for a in (axis if axis is not None else ())))


def _infer_transpose(inputs, attrs):
    x, perm = inputs
    _check_index_dtype(perm, "Transpose", "perm")
    _check_rank(perm, (1,), "perm of transpose")
    order = static_ints(perm)
    dims = x.shape.as_tuple()
    ndims = len(dims) if dims is not None else perm.shape[0].value
    if order is None or dims is None:
        return [(x.dtype, TensorShape(None if ndims is None else [None] * ndims))]
    if sorted(order) != list(range(len(dims))):
        raise ValueError(f"transpose perm {order} is not a permutation of the {len(dims)} "
                         f"dimensions of {x.name} (shape {x.shape})")
    return [(x.dtype, TensorShape.from_tuple(tuple(dims[i] for i in order)))]


define_op("Transpose", infer=_infer_transpose,
          kernel=lambda x, perm: np.transpose(x, tuple(perm)))
_foldable("Transpose")


@RegisterGradient("Transpose")
def _transpose_grad(op, grad):
    return transpose(grad, invert_permutation(op.inputs[1])), None


define_op("InvertPermutation", infer=same_as_input, kernel=lambda p: np.argsort(p).astype(p.dtype))
NotDifferentiable("InvertPermutation")


@register_static_value("InvertPermutation")
def _invert_permutation_static(op):
    perm = constant_value(op.inputs[0])
    return None if perm is None else np.argsort(perm).astype(perm.dtype)


def invert_permutation(x, name: Optional[str] = None) -> Tensor:
    """The inverse of the permutation ``x``: ``y[x[i]] = i``."""
    x = convert_to_tensor(x)
    known = constant_value(x)
    if known is not None:
        return constant(np.argsort(known).astype(known.dtype), name=name or "InvertPermutation")
    return apply_op("InvertPermutation", [x], name=name or "InvertPermutation")


def transpose(a, perm=None, name: str = "transpose", conjugate: bool = False) -> Tensor:
    """Permutes dimensions (reverses them when ``perm`` is None)."""
    x = convert_to_tensor(a)
    if perm is None:
        if x.shape.ndims is None:
            from gradflow.ops.math import range as range_op, subtract
            perm = subtract(subtract(rank(x), 1), range_op(0, rank(x)))
        else:
            perm = list(range(x.shape.ndims - 1, -1, -1))
    result = apply_op("Transpose", [x, _shape_tensor(perm, name="perm")], name=name)
    if conjugate and x.dtype.is_complex:
        from gradflow.ops.math import conj
        result = conj(result)
    return result


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
        raise ValueError(f"Shapes of concat inputs must have equal rank, got "
                         f"{[str(v.shape) for v in values]}")
    axes = static_ints(axis)
    if not ranks or axes is None:
        ndims = next(iter(ranks)) if ranks else None
        return [(dtype, TensorShape(None if ndims is None else [None] * ndims))]
    ndims = ranks.pop()
    if ndims == 0:
        raise ValueError(f"Can't concatenate scalars (use gf.stack instead): "
                         f"{[v.name for v in values]}")
    a = _normalized_axis(axes[0], ndims, "concat")
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
_foldable("ConcatV2")


@RegisterGradient("ConcatV2")
def _concat_grad(op, grad):
    *values, axis = op.inputs
    axis_value = static_ints(axis)
    ndims = values[0].shape.ndims
    if axis_value is None or ndims is None:
        sizes = stack([gather(shape(v), axis) for v in values])
    else:
        a = axis_value[0] % ndims
        static = [v.shape.as_tuple()[a] if v.shape.ndims else None for v in values]
        sizes = static if None not in static else stack([gather_dim(v, a) for v in values])
    return split(grad, sizes, axis) + [None]


def concat(values, axis, name: str = "concat") -> Tensor:
    """Joins tensors along ``axis``."""
    values = [convert_to_tensor(v) for v in values]
    if not values:
        raise ValueError("concat needs at least one tensor")
    if len(values) == 1:
        return identity(values[0], name=name)
    axis = as_tensor(axis, dtype=None if isinstance(axis, Tensor) else dtypes.int32,
                     like=values[0])
    return apply_op("ConcatV2", values + [axis], name=name)


def _infer_split(inputs, attrs):
    value, size_splits, axis = inputs
    _check_index_dtype(size_splits, "SplitV", "size_splits")
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
    a = _normalized_axis(axes[0], len(dims), f"split of {value.name}")
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
    parts = tuple(np.split(value, np.cumsum(sizes)[:-1], axis=a))
    return parts if num_split != 1 else parts[0]


define_op("SplitV", infer=_infer_split, kernel=_split_kernel)


@RegisterGradient("SplitV")
def _split_grad(op, *grads):
    _, _, axis = op.inputs
    parts = [g if g is not None else zeros_like(t) for g, t in zip(grads, op.outputs)]
    return concat(parts, axis), None, None


def split(value, num_or_size_splits, axis=0, num=None, name: str = "split") -> list[Tensor]:
    """Splits ``value`` into equal parts (an int) or parts of the given sizes along ``axis``.

    One size may be -1: it takes what the others leave.
    """
    value = convert_to_tensor(value)
    axis_t = as_tensor(axis, dtype=None if isinstance(axis, Tensor) else dtypes.int32,
                       like=value)
    if not isinstance(num_or_size_splits, Tensor) and np.ndim(num_or_size_splits) == 0:
        count = int(num_or_size_splits)
        sizes = _equal_split_sizes(value, axis_t, count)
    else:
        sizes = _shape_tensor(num_or_size_splits, name="size_splits")
        count = num if num is not None else sizes.shape[0].value
        if count is None:
            raise ValueError(f"Cannot infer the number of splits of {value.name} from "
                             "size_splits; pass num")
    result = apply_op("SplitV", [value, sizes, axis_t], name=name, num_split=count)
    return [result] if isinstance(result, Tensor) else list(result)


def _equal_split_sizes(value: Tensor, axis: Tensor, count: int) -> Tensor:
    """Sizes of ``count`` equal parts of ``value`` along ``axis`` (checked when static)."""
    from gradflow.ops.math import floordiv
    if count <= 0:
        raise ValueError(f"Cannot split {value.name} into {count} parts")
    axis_v = static_ints(axis)
    ndims = value.shape.ndims
    dim = None if axis_v is None or ndims is None else \
        value.shape.as_tuple()[_normalized_axis(axis_v[0], ndims, f"split of {value.name}")]
    if dim is None:
        part = floordiv(gather(shape(value), axis), count)
        return fill([count], part, name="split_sizes")
    if dim % count:
        raise ValueError(f"Dimension size must be evenly divisible by {count} but is {dim} "
                         f"(dimension {axis_v[0]} of {value.name})")
    return _int_vector([dim // count] * count, name="split_sizes")


def _infer_pack(inputs, attrs):
    dtype = inputs[0].dtype
    shape_ = inputs[0].shape
    for v in inputs[1:]:
        if v.dtype is not dtype:
            raise TypeError(f"Tensors passed to stack must have one dtype, got "
                            f"{[t.dtype.name for t in inputs]}")
        if not shape_.is_compatible_with(v.shape):
            raise ValueError(f"Shapes of all inputs must match: values[0].shape = {shape_} != "
                             f"{v.name}.shape = {v.shape}")
        shape_ = shape_.merge_with(v.shape)
    dims = shape_.as_tuple()
    if dims is None:
        return [(dtype, TensorShape(None))]
    a = _normalized_axis(attrs["axis"], len(dims) + 1, "stack")
    return [(dtype, TensorShape.from_tuple(dims[:a] + (len(inputs),) + dims[a:]))]


define_op("Pack", infer=_infer_pack, kernel=lambda *xs, axis: np.stack(xs, axis=axis))


@RegisterGradient("Pack")
def _pack_grad(op, grad):
    return unstack(grad, num=len(op.inputs), axis=op.get_attr("axis"))


@register_static_value("Pack")
def _pack_static(op):
    if not foldable(op):
        return None
    values = [constant_value(t) for t in op.inputs]
    if any(v is None for v in values):
        return None
    return np.stack(values, axis=op.get_attr("axis"))


def stack(values, axis: int = 0, name: str = "stack") -> Tensor:
    """Stacks same-shaped tensors along a new axis."""
    if isinstance(values, Tensor):
        if axis != 0:
            raise TypeError(f"Tensor {values.name} is not iterable: stack a list of tensors")
        return values
    tensors = [convert_to_tensor(v) for v in values]
    if not tensors:
        raise ValueError("stack needs at least one tensor")
    first = tensors[0]
    tensors = [first] + [as_tensor(v, dtype=first.dtype, like=first) for v in tensors[1:]]
    return apply_op("Pack", tensors, name=name, axis=axis)


def _infer_unpack(inputs, attrs):
    x = inputs[0]
    dims = x.shape.as_tuple()
    num = attrs["num"]
    if dims is None:
        return [(x.dtype, TensorShape(None))] * num
    a = _normalized_axis(attrs["axis"], len(dims), f"unstack of {x.name}")
    if dims[a] is not None and dims[a] != num:
        raise ValueError(f"Cannot unstack {num} tensors from {x.name} whose dimension {a} "
                         f"is {dims[a]}")
    return [(x.dtype, TensorShape.from_tuple(dims[:a] + dims[a + 1:]))] * num


def _unpack_kernel(x, *, num, axis):
    if x.shape[axis] != num:
        raise ValueError(f"Input dimension {axis} has size {x.shape[axis]}, expected {num}")
    parts = tuple(np.moveaxis(x, axis, 0))
    return parts if num != 1 else parts[0]


define_op("Unpack", infer=_infer_unpack, kernel=_unpack_kernel)


@RegisterGradient("Unpack")
def _unpack_grad(op, *grads):
    parts = [g if g is not None else zeros_like(t) for g, t in zip(grads, op.outputs)]
    return stack(parts, axis=op.get_attr("axis"))


def unstack(value, num: Optional[int] = None, axis: int = 0, name: str = "unstack") -> list:
    """Splits ``value`` along ``axis`` into a list of tensors of one rank less."""
    x = convert_to_tensor(value)
    if num is None:
        dims = x.shape.as_tuple()
        if dims is None or not -len(dims) <= axis < len(dims) or dims[axis] is None:
            raise ValueError(f"Cannot infer argument `num` from shape {x.shape}")
        num = dims[axis]
    result = apply_op("Unpack", [x], name=name, num=num, axis=axis)
    if isinstance(result, Tensor):
        return [result]
    return result if isinstance(result, list) else []


# ------------------------------------------------------- tiling, padding, reversing
def _infer_tile(inputs, attrs):
    x, multiples = inputs
    _check_index_dtype(multiples, "Tile", "multiples")
    _check_rank(multiples, (1,), "multiples of tile")
    dims = x.shape.as_tuple()
    reps = _partial_ints(multiples)
    if dims is None:
        return [(x.dtype, TensorShape(None if reps is None else [None] * len(reps)))]
    if reps is None:
        reps = [None] * len(dims)
    if len(reps) != len(dims):
        raise ValueError(f"multiples of tile must have one entry per dimension of {x.name} "
                         f"(shape {x.shape}), got {len(reps)} entries ({multiples.name})")
    for i, m in enumerate(reps):
        if m is not None and m < 0:
            raise ValueError(f"Expected multiples[{i}] >= 0, but got {m} ({multiples.name})")
    return [(x.dtype, TensorShape([None if d is None or m is None else d * m
                                   for d, m in zip(dims, reps)]))]


def _tile_kernel(x, multiples):
    if len(multiples) != np.ndim(x):
        raise ValueError(f"multiples has {len(multiples)} entries for an input of rank "
                         f"{np.ndim(x)}")
    for i, m in enumerate(multiples):
        if m < 0:
            raise ValueError(f"Expected multiples[{i}] >= 0, but got {m}")
    return np.tile(x, tuple(int(m) for m in multiples))


define_op("Tile", infer=_infer_tile, kernel=_tile_kernel)
_foldable("Tile")


@RegisterGradient("Tile")
def _tile_grad(op, grad):
    """Views the gradient as [m0, d0, m1, d1, ...] and sums over the copies (even axes)."""
    from gradflow.ops.math import cast, range as range_op, reduce_sum
    x, multiples = op.inputs
    dims, reps = x.shape.as_tuple(), static_ints(multiples)
    if dims is not None and None not in dims and reps is not None:
        split_shape = [v for pair in zip(reps, dims) for v in pair]
        axes = list(range(0, 2 * len(dims), 2))
    else:
        pairs = stack([cast(multiples, dtypes.int32), shape(x)])
        split_shape = reshape(transpose(pairs), [-1])
        axes = range_op(0, size(split_shape), 2)
    return reduce_sum(reshape(grad, split_shape), axes), None


def tile(input, multiples, name: Optional[str] = None) -> Tensor:  # noqa: A002
    """Repeats ``input`` ``multiples[i]`` times along dimension i."""
    x = convert_to_tensor(input)
    return apply_op("Tile", [x, _shape_tensor(multiples, name="multiples")],
                    name=name or "Tile")


_PAD_MODES = ("CONSTANT", "REFLECT", "SYMMETRIC")


def _check_paddings(pairs: Sequence, dims: Sequence, mode: str) -> None:
    """ValueError for negative paddings, or mirror paddings the dimensions cannot supply."""
    for i, (before, after) in enumerate(pairs):
        if before < 0 or after < 0:
            raise ValueError(f"Paddings must be non-negative, got [{before}, {after}] for "
                             f"dimension {i}")
        d = dims[i]
        if d is None or mode == "CONSTANT":
            continue
        if mode == "REFLECT" and max(before, after) >= d:
            raise ValueError(f"paddings must be less than the dimension size: {before}, "
                             f"{after} not less than {d} (dimension {i}, REFLECT mode)")
        if mode == "SYMMETRIC" and max(before, after) > d:
            raise ValueError(f"paddings must be no greater than the dimension size: {before}, "
                             f"{after} greater than {d} (dimension {i}, SYMMETRIC mode)")


def _infer_pad(inputs, attrs):
    x, paddings = inputs[0], inputs[1]
    mode = attrs.get("mode", "CONSTANT")
    _check_index_dtype(paddings, "Pad", "paddings")
    _check_rank(paddings, (2,), "paddings of pad")
    dims, p_dims = x.shape.as_tuple(), paddings.shape.as_tuple()
    ndims = len(dims) if dims is not None else (p_dims[0] if p_dims is not None else None)
    if p_dims is not None and (p_dims[1] not in (None, 2) or p_dims[0] not in (None, ndims)):
        raise ValueError(f"paddings of pad must have shape [{ndims}, 2] for {x.name} of shape "
                         f"{x.shape}, got {paddings.shape} ({paddings.name})")
    if len(inputs) == 3:
        _check_pad_value(x, inputs[2])
    if ndims is None:
        return [(x.dtype, TensorShape(None))]
    dims = dims if dims is not None else (None,) * ndims
    values = static_ints(paddings)
    if values is None:
        return [(x.dtype, TensorShape([None] * ndims))]
    pairs = np.reshape(values, (-1, 2)).tolist()
    _check_paddings(pairs, dims, mode)
    return [(x.dtype, TensorShape([None if d is None else d + b + a
                                   for d, (b, a) in zip(dims, pairs)]))]


def _check_pad_value(x: Tensor, value: Tensor) -> None:
    if value.dtype is not x.dtype:
        raise TypeError(f"constant_values of pad has dtype {value.dtype.name}, expected "
                        f"{x.dtype.name} like the padded tensor {x.name}")
    if value.shape.ndims not in (None, 0):
        raise ValueError(f"constant_values of pad must be a scalar, got shape {value.shape}")


def _pad_pairs(x: np.ndarray, paddings: np.ndarray, mode: str) -> list:
    """Validated (before, after) pairs, one per dimension of ``x``."""
    if np.shape(paddings) != (np.ndim(x), 2):
        raise ValueError(f"paddings must have shape [{np.ndim(x)}, 2], got "
                         f"{list(np.shape(paddings))}")
    pairs = [(int(b), int(a)) for b, a in paddings]
    _check_paddings(pairs, np.shape(x), mode)
    return pairs


def _pad_kernel(x, paddings, constant_values=0):
    pairs = _pad_pairs(x, paddings, "CONSTANT")
    if not pairs:
        return np.array(x)
    return np.pad(x, pairs, constant_values=constant_values)


def _mirror_pad_kernel(x, paddings, *, mode):
    pairs = _pad_pairs(x, paddings, mode)
    if not pairs:
        return np.array(x)
    return np.pad(x, pairs, mode=mode.lower())


def _mirror_pad_grad_kernel(grad, paddings, *, mode):
    """Folds the mirrored borders back onto the elements they copy (adjoint of MirrorPad)."""
    result = grad
    for axis, (before, after) in enumerate(np.asarray(paddings).tolist()):
        inner = result.shape[axis] - before - after
        source = np.pad(np.arange(inner), (before, after), mode=mode.lower())
        folded = np.zeros(result.shape[:axis] + (inner,) + result.shape[axis + 1:], grad.dtype)
        np.add.at(folded, (builtins.slice(None),) * axis + (source,), result)
        result = folded
    return result


def _infer_mirror_pad_grad(inputs, attrs):
    grad, paddings = inputs
    dims, values = grad.shape.as_tuple(), static_ints(paddings)
    if dims is None or values is None:
        return [(grad.dtype, TensorShape(None if dims is None else [None] * len(dims)))]
    pairs = np.reshape(values, (-1, 2)).tolist()
    return [(grad.dtype, TensorShape([None if d is None else d - b - a
                                      for d, (b, a) in zip(dims, pairs)]))]


define_op("Pad", infer=_infer_pad, kernel=_pad_kernel)
define_op("PadV2", infer=_infer_pad, kernel=_pad_kernel)
define_op("MirrorPad", infer=_infer_pad, kernel=_mirror_pad_kernel)
define_op("MirrorPadGrad", infer=_infer_mirror_pad_grad, kernel=_mirror_pad_grad_kernel)


@RegisterGradient("Pad")
def _pad_grad(op, grad):
    x, paddings = op.inputs
    return slice(grad, _pad_begin(paddings), shape_of_input(x)), None


@RegisterGradient("PadV2")
def _pad_v2_grad(op, grad):
    """Like Pad; the padding value receives the gradient of every padded element."""
    from gradflow.ops.math import reduce_sum, subtract
    x, paddings, value = op.inputs
    dx = slice(grad, _pad_begin(paddings), shape_of_input(x))
    dvalue = subtract(reduce_sum(grad), reduce_sum(dx)) if gradient_needed(value) else None
    return dx, None, dvalue


def _pad_begin(paddings: Tensor) -> Tensor:
    """The paddings before each dimension: where the unpadded tensor starts."""
    values = static_ints(paddings)
    if values is not None:
        return _int_vector(values[0::2], name="begin")
    return reshape(slice(paddings, [0, 0], [-1, 1]), [-1])


@RegisterGradient("MirrorPad")
def _mirror_pad_grad(op, grad):
    return apply_op("MirrorPadGrad", [convert_to_tensor(grad), op.inputs[1]],
                    name="MirrorPadGrad", mode=op.get_attr("mode")), None


@RegisterGradient("MirrorPadGrad")
def _mirror_pad_grad_grad(op, grad):
    return apply_op("MirrorPad", [convert_to_tensor(grad), op.inputs[1]], name="MirrorPad",
                    mode=op.get_attr("mode")), None


def pad(tensor, paddings, mode: str = "CONSTANT", name: Optional[str] = None,
        constant_values=0) -> Tensor:
    """Pads ``tensor`` by ``paddings[i] = [before, after]`` along each dimension i.

    ``mode`` (any case): CONSTANT (with ``constant_values``), REFLECT (mirror without
    the edge) or SYMMETRIC (mirror with the edge).
    """
    x = convert_to_tensor(tensor)
    mode_name = str(mode).upper()
    if mode_name not in _PAD_MODES:
        raise ValueError(f'Value of argument `mode` expected to be one of "CONSTANT", '
                         f'"REFLECT", or "SYMMETRIC". Received `mode` = {mode}')
    paddings_t = as_tensor(paddings, dtype=None if isinstance(paddings, Tensor)
                           else dtypes.int32, like=x)
    if mode_name != "CONSTANT":
        return apply_op("MirrorPad", [x, paddings_t], name=name or "MirrorPad", mode=mode_name)
    if not isinstance(constant_values, Tensor) and np.ndim(constant_values) == 0 \
            and constant_values == 0:
        return apply_op("Pad", [x, paddings_t], name=name or "Pad")
    value = as_tensor(constant_values, dtype=None if isinstance(constant_values, Tensor)
                      else x.dtype, like=x)
    return apply_op("PadV2", [x, paddings_t, value], name=name or "PadV2")


def _reversed_axes(axes: Sequence[int], ndims: int, what: str) -> tuple:
    """Normalised axes of a reverse; ValueError for out-of-range or repeated axes."""
    seen: list = []
    for i, a in enumerate(axes):
        if not -ndims <= a < ndims:
            raise ValueError(f"'axis'[{i}] = {a} is out of valid range [{-ndims}, {ndims}) "
                             f"for reverse of {what}")
        if a % ndims in seen:
            raise ValueError(f"axis {a % ndims} specified more than once for reverse of {what}")
        seen.append(a % ndims)
    return tuple(seen)


def _infer_reverse(inputs, attrs):
    x, axis = inputs
    _check_index_dtype(axis, "ReverseV2", "axis")
    _check_rank(axis, (1,), "axis of reverse")
    axes = static_ints(axis)
    if axes is not None and x.shape.ndims is not None:
        _reversed_axes(axes, x.shape.ndims, f"{x.name} with shape {x.shape}")
    return [(x.dtype, x.shape)]


def _reverse_kernel(x, axis):
    axes = _reversed_axes([int(a) for a in axis], np.ndim(x), "the input")
    return np.flip(x, axes) if axes else x


define_op("ReverseV2", infer=_infer_reverse, kernel=_reverse_kernel)


@RegisterGradient("ReverseV2")
def _reverse_grad(op, grad):
    return reverse(grad, op.inputs[1]), None


def reverse(tensor, axis, name: Optional[str] = None) -> Tensor:
    """Reverses ``tensor`` along each dimension listed in ``axis``."""
    x = convert_to_tensor(tensor)
    if not isinstance(axis, Tensor) and np.ndim(axis) == 0:
        axis = [axis]
    return apply_op("ReverseV2", [x, _shape_tensor(axis, name="axis")],
                    name=name or "ReverseV2")


reverse_v2 = reverse


# ----------------------------------------------------------------- broadcasting
def _infer_broadcast_to(inputs, attrs):
    x, target = inputs
    _check_index_dtype(target, "BroadcastTo", "shape")
    _check_rank(target, (1,), "shape of broadcast_to")
    wanted = _static_shape_of(target).as_tuple()
    have = x.shape.as_tuple()
    if wanted is None or have is None:
        return [(x.dtype, TensorShape(wanted))]
    if len(have) > len(wanted):
        raise ValueError(f"Cannot broadcast {x.name} of shape {x.shape} to the lower-rank "
                         f"shape {list(wanted)}")
    have = (1,) * (len(wanted) - len(have)) + have
    result = []
    for h, w in zip(have, wanted):
        if w is None:
            result.append(None if h in (1, None) else h)
        elif h not in (1, None, w):
            raise ValueError(f"Dimensions must be equal, but are {h} and {w}: cannot "
                             f"broadcast {x.name} of shape {x.shape} to {list(wanted)}")
        else:
            result.append(w)
    return [(x.dtype, TensorShape(result))]


define_op("BroadcastTo", infer=_infer_broadcast_to,
          kernel=lambda x, s: np.array(np.broadcast_to(x, tuple(s))))
_foldable("BroadcastTo")


@RegisterGradient("BroadcastTo")
def _broadcast_to_grad(op, grad):
    from gradflow.ops.math import reduce_to_shape_of
    return reduce_to_shape_of(convert_to_tensor(grad), op.inputs[0]), None


def broadcast_to(input, shape, name: Optional[str] = None) -> Tensor:  # noqa: A002
    """``input`` broadcast (NumPy rules) to ``shape``."""
    x = convert_to_tensor(input)
    return apply_op("BroadcastTo", [x, _shape_tensor(shape)], name=name or "BroadcastTo")


def _broadcast_gradient_args_kernel(s0, s1):
    n = max(len(s0), len(s1))
    a = np.concatenate([np.ones(n - len(s0), s0.dtype), s0])
    b = np.concatenate([np.ones(n - len(s1), s1.dtype), s1])
    r0 = [i for i in range(n) if a[i] == 1 and b[i] != 1]
    r1 = [i for i in range(n) if b[i] == 1 and a[i] != 1]
    if any(a[i] != b[i] and a[i] != 1 and b[i] != 1 for i in range(n)):
        raise errors.InvalidArgumentError(None, None, f"Incompatible shapes: {list(s0)} vs. "
                                          f"{list(s1)}")
    return np.asarray(r0, s0.dtype), np.asarray(r1, s0.dtype)


define_op("BroadcastGradientArgs",
          infer=lambda inputs, attrs: [(inputs[0].dtype, TensorShape([None]))] * 2,
          kernel=_broadcast_gradient_args_kernel)
NotDifferentiable("BroadcastGradientArgs")


def broadcast_gradient_args(s0, s1, name: Optional[str] = None) -> list[Tensor]:
    """For shapes that broadcast together, the axes each side was broadcast along."""
    return apply_op("BroadcastGradientArgs", [convert_to_tensor(s0), convert_to_tensor(s1)],
                    name=name or "BroadcastGradientArgs")


# --------------------------------------------------------------------- slicing
def _infer_slice(inputs, attrs):
    x, begin, size_ = inputs
    for t, arg in ((begin, "begin"), (size_, "size")):
        _check_index_dtype(t, "Slice", arg)
        _check_rank(t, (1,), f"{arg} of slice")
    b, s = _partial_ints(begin), _partial_ints(size_)
    dims = x.shape.as_tuple()
    lengths = {len(v) for v in (b, s, dims) if v is not None}
    if len(lengths) > 1:
        raise ValueError(f"slice of {x.name} (shape {x.shape}) needs begin and size with one "
                         f"entry per dimension, got begin {begin.shape} and size {size_.shape}")
    if not lengths:
        return [(x.dtype, TensorShape(None))]
    ndims = lengths.pop()
    b, s, dims = (v if v is not None else [None] * ndims for v in (b, s, dims))
    result = []
    for i, (start, count, d) in enumerate(zip(b, s, dims)):
        if None not in (start, count, d):
            _check_slice_bounds(i, start, count, d)
        if count == -1:
            result.append(None if None in (start, d) else d - start)
        else:
            result.append(count)
    return [(x.dtype, TensorShape(result))]


def _check_slice_bounds(i: int, start: int, count: int, dim: int) -> None:
    if not 0 <= start <= dim:
        raise ValueError(f"Expected begin[{i}] in [0, {dim}], but got {start}")
    if count != -1 and not 0 <= count <= dim - start:
        raise ValueError(f"Expected size[{i}] in [0, {dim - start}], but got {count}")


def _slice_kernel(x, begin, size):
    if not len(begin) == len(size) == np.ndim(x):
        raise ValueError(f"begin and size must have one entry per dimension of the input "
                         f"(rank {np.ndim(x)}), got {len(begin)} and {len(size)}")
    index = []
    for i, (start, count, d) in enumerate(zip(begin, size, np.shape(x))):
        _check_slice_bounds(i, int(start), int(count), d)
        stop = d if count == -1 else start + count
        index.append(builtins.slice(int(start), int(stop)))
    return np.array(x[tuple(index)])


define_op("Slice", infer=_infer_slice, kernel=_slice_kernel)
_foldable("Slice")


@RegisterGradient("Slice")
def _slice_grad(op, grad):
    """Pads the gradient back to the input's shape with zeros."""
    from gradflow.ops.math import cast, subtract
    x, begin, _ = op.inputs
    y = op.outputs[0]
    start = static_ints(begin)
    if start is not None and x.shape.is_fully_defined() and y.shape.is_fully_defined():
        after = [d - b - n for d, b, n in zip(x.shape.as_list(), start, y.shape.as_list())]
        paddings = constant(np.stack([start, after], axis=1).astype(np.int32).reshape(-1, 2),
                            name="paddings")
    else:
        start_t = cast(begin, dtypes.int32)
        after_t = subtract(subtract(shape(x), start_t), shape(y))
        paddings = stack([start_t, after_t], axis=1)
    return pad(grad, paddings), None, None


def slice(input_, begin, size, name: Optional[str] = None) -> Tensor:  # noqa: A001
    """The block of ``input_`` starting at ``begin`` of extent ``size`` (-1: to the end)."""
    x = convert_to_tensor(input_)
    return apply_op("Slice", [x, _shape_tensor(begin, name="begin"),
                              _shape_tensor(size, name="size")], name=name or "Slice")


_MASKS = ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask")
_UNKNOWN = object()  # a bound of a strided slice not known at build time


def _index_tuple(begin, end, strides, masks: dict) -> tuple:
    """The NumPy index equivalent to a strided slice (None bounds become ``_UNKNOWN``)."""
    def bound(v):
        return _UNKNOWN if v is None else int(v)

    index = []
    for i, (b, e, s) in enumerate(zip(begin, end, strides)):
        bit = 1 << i
        if masks["ellipsis_mask"] & bit:
            index.append(Ellipsis)
        elif masks["new_axis_mask"] & bit:
            index.append(None)
        elif masks["shrink_axis_mask"] & bit:
            index.append(bound(b))
        else:
            index.append(builtins.slice(None if masks["begin_mask"] & bit else bound(b),
                                        None if masks["end_mask"] & bit else bound(e),
                                        bound(s)))
    return tuple(index)


def _sliced_shape(dims: tuple, index: tuple) -> tuple:
    """Static shape of ``x[index]`` for static ``dims`` (None entries stay unknown)."""
    if Ellipsis not in index:
        index = index + (Ellipsis,)
    consumed = sum(1 for item in index if item is not None and item is not Ellipsis)
    if consumed > len(dims):
        raise ValueError(f"Index has {consumed} entries for a tensor of rank {len(dims)}")
    result = []
    position = 0
    for item in index:
        if item is Ellipsis:
            span = len(dims) - consumed
            result.extend(dims[position:position + span])
            position += span
        elif item is None:
            result.append(1)
        elif isinstance(item, builtins.slice):
            d = dims[position]
            bounds = (item.start, item.stop, item.step)
            result.append(None if d is None or any(v is _UNKNOWN for v in bounds)
                          else len(range(d)[item]))
            position += 1
        else:
            d = dims[position]
            if item is not _UNKNOWN and d is not None and not -d <= item < d:
                raise ValueError(f"slice index {item} of dimension {position} out of bounds "
                                 f"(size {d})")
            position += 1
    return tuple(result)


def _infer_strided_slice(inputs, attrs):
    x, begin, end, strides = inputs
    for t, arg in ((begin, "begin"), (end, "end"), (strides, "strides")):
        _check_index_dtype(t, "StridedSlice", arg)
    dims = x.shape.as_tuple()
    b, e, s = _partial_ints(begin), _partial_ints(end), _partial_ints(strides)
    if 0 in (s or ()):
        raise ValueError(f"strided_slice of {x.name}: strides must be non-zero, got {s}")
    if dims is None or b is None or e is None or s is None:
        return [(x.dtype, TensorShape(None))]
    if not len(b) == len(e) == len(s):
        raise ValueError(f"strided_slice of {x.name}: begin, end and strides must have one "
                         f"length, got {len(b)}, {len(e)} and {len(s)}")
    index = _index_tuple(b, e, s, attrs)
    return [(x.dtype, TensorShape.from_tuple(_sliced_shape(dims, index)))]


def _strided_slice_kernel(x, begin, end, strides, **masks):
    return np.array(x[_index_tuple(begin, end, strides, masks)])


define_op("StridedSlice", infer=_infer_strided_slice, kernel=_strided_slice_kernel)
_foldable("StridedSlice")


@RegisterGradient("StridedSlice")
def _strided_slice_grad(op, grad):
    x, begin, end, strides = op.inputs
    masks = {m: op.get_attr(m) for m in _MASKS}
    dx = apply_op("StridedSliceGrad", [shape_of_input(x), begin, end, strides,
                                       convert_to_tensor(grad)], name="StridedSliceGrad", **masks)
    return dx, None, None, None


def _infer_strided_slice_grad(inputs, attrs):
    shape_t, _, _, _, dy = inputs
    return [(dy.dtype, _static_shape_of(shape_t))]


def _strided_slice_grad_kernel(shape_, begin, end, strides, dy, **masks):
    out = np.zeros(tuple(shape_), dtype=dy.dtype)
    out[_index_tuple(begin, end, strides, masks)] = dy
    return out


define_op("StridedSliceGrad", infer=_infer_strided_slice_grad, kernel=_strided_slice_grad_kernel)


@RegisterGradient("StridedSliceGrad")
def _strided_slice_grad_grad(op, grad):
    _, begin, end, strides, _ = op.inputs
    masks = {m: op.get_attr(m) for m in _MASKS}
    return None, None, None, None, apply_op(
        "StridedSlice", [convert_to_tensor(grad), begin, end, strides], name="StridedSlice",
        **masks)


def strided_slice(input_, begin, end, strides=None, begin_mask: int = 0, end_mask: int = 0,
                  ellipsis_mask: int = 0, new_axis_mask: int = 0, shrink_axis_mask: int = 0,
                  var=None, name: Optional[str] = None) -> Tensor:
    """``input_[begin:end:strides]`` per dimension, with TF's mask bits (see ``__getitem__``)."""
    x = convert_to_tensor(input_)
    begin_t = _shape_tensor(begin, name="begin")
    end_t = _shape_tensor(end, name="end")
    strides_t = ones_like(begin_t) if strides is None else _shape_tensor(strides,
                                                                         name="strides")
    return apply_op("StridedSlice", [x, begin_t, end_t, strides_t],
                    name=name or "StridedSlice", begin_mask=begin_mask, end_mask=end_mask,
                    ellipsis_mask=ellipsis_mask, new_axis_mask=new_axis_mask,
                    shrink_axis_mask=shrink_axis_mask)


def _valid_index(item) -> bool:
    """Ints (anything with ``__index__``) and scalar int32/int64 tensors index tensors."""
    if isinstance(item, Tensor):
        return item.dtype in _INDEX_TYPES and item.shape.ndims in (None, 0)
    return hasattr(item, "__index__")


def _is_mask(key) -> bool:
    """A bool tensor, array or Python bool as the whole key: ``boolean_mask`` (as in TF)."""
    if isinstance(key, Tensor):
        return key.dtype is dtypes.bool
    if isinstance(key, np.ndarray):
        return key.dtype == np.bool_
    return isinstance(key, (bool, np.bool_))


def _index_error(item) -> TypeError:
    return TypeError(f"Only integers, slices (`:`), ellipsis (`...`), gf.newaxis (`None`) and "
                     f"scalar gf.int32/gf.int64 tensors are valid indices, got {item!r}")


def _slice_helper(tensor: Tensor, key) -> Tensor:
    """``tensor[key]`` for ints, slices, None, Ellipsis and scalar int tensors.

    A bool tensor or array as the whole key selects like ``boolean_mask``.
    """
    if _is_mask(key):
        return boolean_mask(tensor, key)
    if not isinstance(key, tuple):
        key = (key,)
    begin, end, strides = [], [], []
    masks = dict.fromkeys(_MASKS, 0)
    for i, item in enumerate(key):
        bit = 1 << i
        if isinstance(item, builtins.slice):
            for part in (item.start, item.stop, item.step):
                if part is not None and not _valid_index(part):
                    raise _index_error(part)
            begin.append(0 if item.start is None else item.start)
            end.append(0 if item.stop is None else item.stop)
            strides.append(1 if item.step is None else item.step)
            if item.start is None:
                masks["begin_mask"] |= bit
            if item.stop is None:
                masks["end_mask"] |= bit
        elif item is Ellipsis or item is None:
            begin.append(0), end.append(0), strides.append(1)
            masks["ellipsis_mask" if item is Ellipsis else "new_axis_mask"] |= bit
        elif _valid_index(item):
            begin.append(item)
            end.append(item + 1)
            strides.append(1)
            masks["shrink_axis_mask"] |= bit
        else:
            raise _index_error(item)
    graph = graph_for([tensor] + [v for v in begin + end + strides if isinstance(v, Tensor)])
    with graph.as_default(), graph.name_scope("strided_slice") as scope:
        return strided_slice(tensor, begin, end, strides, name=scope, **masks)


# --------------------------------------------------------------- gather & scatter
def _check_gather_indices(indices: np.ndarray, limit: int) -> None:
    """InvalidArgumentError naming the first index outside [0, limit)."""
    bad = (indices < 0) | (indices >= limit)
    if bad.any():
        position = np.unravel_index(int(np.argmax(bad)), indices.shape)
        raise errors.InvalidArgumentError(
            None, None, f"indices[{','.join(str(int(p)) for p in position)}] = "
            f"{indices[position]} is not in [0, {limit})")


def _infer_gather(inputs, attrs):
    params, indices, axis = inputs
    _check_index_dtype(indices, "GatherV2", "indices")
    _check_index_dtype(axis, "GatherV2", "axis")
    batch_dims = attrs["batch_dims"]
    axes = static_ints(axis)
    p, i = params.shape.as_tuple(), indices.shape.as_tuple()
    if p is None or i is None or axes is None:
        return [(params.dtype, TensorShape(None))]
    if not p:
        raise ValueError(f"params of gather must be at least 1-D, got the scalar {params.name}")
    a = _normalized_axis(axes[0], len(p), f"gather from {params.name}")
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
        return np.take(params, indices, axis=a)
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
_foldable("GatherV2")


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
        values = reshape(grad, concat([_int_vector([-1], name="rows"), params_shape[1:]], 0))
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
    from gradflow.ops.math import add, cast, multiply, range as range_op
    p_rank, b, a = params.shape.ndims, batch_dims, axis
    n_idx = indices.shape.ndims - b
    params_shape = shape_of_input(params)
    batch_shape = gather(params_shape, _int_vector(range(b)))
    rest_shape = gather(params_shape, _int_vector([*range(b, a), *range(a + 1, p_rank)]))
    to_rows = [*range(b), *range(a, a + n_idx), *range(b, a),
               *range(a + n_idx, p_rank - 1 + n_idx)]
    values = reshape(_transposed(convert_to_tensor(grad), to_rows),
                     concat([_int_vector([-1]), rest_shape], 0))
    dim = cast(gather(params_shape, a), indices.dtype)
    ids, rows = indices, dim
    if b:
        count = cast(_num_elements(batch_shape), indices.dtype)
        offsets = multiply(range_op(0, count), dim)
        ids = add(indices, reshape(offsets, concat([batch_shape, _int_vector([1] * n_idx)], 0)))
        rows = multiply(count, dim)
    summed = unsorted_segment_sum(values, reshape(ids, [-1]), rows)
    dense = reshape(summed, concat([batch_shape, gather(params_shape, _int_vector([a])),
                                    rest_shape], 0))
    return _transposed(dense, [*range(b), *range(b + 1, a + 1), b, *range(a + 1, p_rank)])


def gather_dim(x: Tensor, axis: int) -> Tensor:
    """Size of dimension ``axis`` of ``x`` as an int32 scalar tensor (constant when static)."""
    static = x.shape.as_tuple()
    if static is not None and static[axis] is not None:
        return constant(np.int32(static[axis]), name="dim")
    return shape(x)[axis]


def gather(params, indices, validate_indices=None, name: Optional[str] = None, axis=None,
           batch_dims: int = 0) -> Tensor:
    """Gathers slices of ``params`` along ``axis`` at ``indices``.

    The first ``batch_dims`` dimensions of params and indices are batch dimensions:
    each batch element gathers from its own params (negative counts from the back).
    """
    params_t = convert_to_tensor(params)
    indices_t = as_tensor(indices, like=params_t)
    if batch_dims < 0:
        if indices_t.shape.ndims is None:
            raise ValueError("gather with a negative batch_dims needs indices of known rank")
        batch_dims += indices_t.shape.ndims
    if axis is None:
        axis = batch_dims
    axis_t = as_tensor(axis, dtype=None if isinstance(axis, Tensor) else
                       (indices_t.dtype if indices_t.dtype in _INDEX_TYPES else dtypes.int32),
                       like=params_t)
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
    _check_index_dtype(indices, "GatherNd", "indices")
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
    from gradflow.ops.math import cast, range as range_op
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
    flat_params = reshape(params, concat([_int_vector([-1]), params_shape[batch_dims:]], 0))
    positions = reshape(range_op(0, _num_elements(batch_shape)),
                        concat([batch_shape, _int_vector([1] * (i_rank - batch_dims))], 0))
    coordinate_shape = concat([shape_of_input(indices)[:-1], _int_vector([1])], 0)
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
    _check_index_dtype(indices, "ScatterNd", "indices")
    _check_index_dtype(shape_t, "ScatterNd", "shape")
    _check_rank(shape_t, (1,), "shape of scatter_nd")
    out = _static_shape_of(shape_t)
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


def scatter_nd(indices, updates, shape, name: Optional[str] = None) -> Tensor:  # noqa: F811
    """A zero tensor of ``shape`` with ``updates`` added at ``indices`` (repeats add up)."""
    updates_t = convert_to_tensor(updates)
    indices_t = as_tensor(indices, like=updates_t)
    return apply_op("ScatterNd", [indices_t, updates_t, _shape_tensor(shape)],
                    name=name or "ScatterNd")


# --------------------------------------------------------- unsorted segment sums
def infer_unsorted_segment(inputs, attrs):
    """Inference of every ``UnsortedSegment*`` op: [num_segments] + data dims past the ids."""
    data, ids, num = inputs
    _check_index_dtype(ids, "UnsortedSegment", "segment_ids")
    _check_index_dtype(num, "UnsortedSegment", "num_segments")
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
    from gradflow.ops.math import greater_equal, maximum, select_v2
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
        tail = _int_vector([1] * (ranks[1] - ranks[0]))
    return reshape(t, concat([shape_of_input(t), tail], 0))


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


# ------------------------------------------------------------------- boolean mask
def _infer_boolean_mask(inputs, attrs):
    x, mask = inputs
    if mask.dtype is not dtypes.bool:
        raise TypeError(f"mask of boolean_mask must be bool, got {mask.dtype.name} "
                        f"({mask.name})")
    a, dims = attrs["axis"], x.shape.as_tuple()
    m = mask.shape.ndims
    if dims is None:
        return [(x.dtype, TensorShape(None))]
    masked = TensorShape.from_tuple(dims[a:a + m])
    if a + m > len(dims) or not masked.is_compatible_with(mask.shape):
        raise ValueError(f"Shapes {masked} and {mask.shape} are incompatible: the mask "
                         f"{mask.name} must match dimensions {a}..{a + m - 1} of {x.name} "
                         f"(shape {x.shape})")
    known = constant_value(mask)
    count = None if known is None else int(np.count_nonzero(known))
    return [(x.dtype, TensorShape.from_tuple(dims[:a] + (count,) + dims[a + m:]))]


def _mask_index(x_shape: tuple, mask: np.ndarray, axis: int) -> tuple:
    """The NumPy index selecting ``mask``'s elements along dimensions ``axis``..."""
    if x_shape[axis:axis + mask.ndim] != mask.shape:
        raise ValueError(f"mask of shape {list(mask.shape)} does not match dimensions "
                         f"{axis}..{axis + mask.ndim - 1} of the input shape {list(x_shape)}")
    return (builtins.slice(None),) * axis + (mask,)


def _boolean_mask_grad_kernel(grad, mask, shape_, *, axis):
    out = np.zeros(tuple(int(d) for d in shape_), grad.dtype)
    out[_mask_index(out.shape, mask, axis)] = grad
    return out


define_op("BooleanMask", infer=_infer_boolean_mask,
          kernel=lambda x, mask, *, axis: x[_mask_index(np.shape(x), mask, axis)])
define_op("BooleanMaskGrad",
          infer=lambda inputs, attrs: [(inputs[0].dtype, _static_shape_of(inputs[2]))],
          kernel=_boolean_mask_grad_kernel)


@RegisterGradient("BooleanMask")
def _boolean_mask_grad(op, grad):
    x, mask = op.inputs
    return apply_op("BooleanMaskGrad", [convert_to_tensor(grad), mask, shape_of_input(x)],
                    name="BooleanMaskGrad", axis=op.get_attr("axis")), None


@RegisterGradient("BooleanMaskGrad")
def _boolean_mask_grad_grad(op, grad):
    _, mask, _ = op.inputs
    return apply_op("BooleanMask", [convert_to_tensor(grad), mask], name="BooleanMask",
                    axis=op.get_attr("axis")), None, None


def boolean_mask(tensor, mask, name: str = "boolean_mask", axis=None) -> Tensor:
    """The elements (or slices) of ``tensor`` where ``mask`` is true.

    ``mask`` covers dimensions ``axis``..``axis + rank(mask) - 1``, which collapse into one.
    """
    x = convert_to_tensor(tensor)
    mask_t = as_tensor(mask, like=x)
    m = mask_t.shape.ndims
    if m is None:
        raise ValueError("Number of mask dimensions must be specified, even if some dimensions "
                         "are None. E.g. shape=[None] is ok, but shape=None is not.")
    if m == 0:
        raise ValueError("mask cannot be scalar.")
    axis = 0 if axis is None else int(axis)
    if axis < 0:
        if x.shape.ndims is None:
            raise ValueError("boolean_mask with a negative axis needs a tensor of known rank")
        axis += x.shape.ndims
    return apply_op("BooleanMask", [x, mask_t], name=name, axis=axis)


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
    a = len(dims) if a == -1 else _normalized_axis(a, len(dims) + 1, "one_hot")
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


def one_hot(indices, depth, on_value=None, off_value=None, axis=None, dtype=None,
            name: Optional[str] = None) -> Tensor:
    """One-hot vectors of length ``depth`` along ``axis`` (default last).

    Out-of-range (and negative) indices give all-``off_value`` vectors. The dtype is
    ``dtype``, else that of ``on_value``/``off_value``, else float32.
    """
    indices_t = convert_to_tensor(indices)
    hint = None if dtype is None else dtypes.as_dtype(dtype)
    given = {arg: convert_to_tensor(v, dtype_hint=hint, name=arg)
             for arg, v in (("on_value", on_value), ("off_value", off_value)) if v is not None}
    out_dtype = _one_hot_dtype(given, hint)
    on_t, off_t = (given[arg] if arg in given else constant(default, dtype=out_dtype, name=arg)
                   for arg, default in (("on_value", 1), ("off_value", 0)))
    depth_t = as_tensor(depth, dtype=None if isinstance(depth, Tensor) else dtypes.int32,
                        like=indices_t)
    return apply_op("OneHot", [indices_t, depth_t, on_t, off_t], name=name or "one_hot",
                    axis=-1 if axis is None else int(axis))


def _infer_sequence_mask(inputs, attrs):
    lengths = inputs[0]
    check_dtype_in(lengths, (dtypes.int8, dtypes.int16) + _INDEX_TYPES, "SequenceMask",
                   "lengths")
    width = None
    if len(inputs) == 2:
        maxlen = inputs[1]
        _check_index_dtype(maxlen, "SequenceMask", "maxlen")
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
    _check_rank(x, (1,), "x of unique")
    out_idx = attrs["out_idx"]
    if out_idx not in _INDEX_TYPES:
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


def unique(x, out_idx=dtypes.int32, name: Optional[str] = None) -> Unique:
    """The distinct values ``y`` of the 1-D ``x`` in order of appearance; ``x = y[idx]``."""
    return Unique(*apply_op("Unique", [convert_to_tensor(x)], name=name or "Unique",
                            out_idx=dtypes.as_dtype(out_idx), with_counts=False))


def unique_with_counts(x, out_idx=dtypes.int32, name: Optional[str] = None) -> UniqueWithCounts:
    """Like ``unique``, also counting how often each distinct value occurs."""
    return UniqueWithCounts(*apply_op("UniqueWithCounts", [convert_to_tensor(x)],
                                      name=name or "UniqueWithCounts",
                                      out_idx=dtypes.as_dtype(out_idx), with_counts=True))


# -------------------------------------------------------------- grids and ranges
def _infer_linspace(inputs, attrs):
    start, stop, num = inputs
    check_dtype_in(start, FLOATING, "LinSpace", "start")
    if stop.dtype is not start.dtype:
        raise TypeError(f"start and stop of linspace must have one dtype, got "
                        f"{start.dtype.name} ({start.name}) and {stop.dtype.name} ({stop.name})")
    _check_index_dtype(num, "LinSpace", "num")
    if num.shape.ndims not in (None, 0):
        raise ValueError(f"num of linspace must be a scalar, got shape {num.shape}")
    count = (static_ints(num) or [None])[0]
    if count is not None and count < 0:
        raise ValueError(f"num of linspace must be non-negative, got {count}")
    dims = broadcast_shape(start.shape, stop.shape, f"linspace({start.name}, {stop.name})")
    if dims.ndims is None:
        return [(start.dtype, TensorShape(None))]
    a = _normalized_axis(attrs["axis"], dims.ndims + 1, "linspace")
    return [(start.dtype, dims[:a].concatenate([count]).concatenate(dims[a:]))]


def _linspace_kernel(start, stop, num, *, axis):
    if num < 0:
        raise ValueError(f"num must be non-negative, got {num}")
    return np.linspace(start, stop, int(num), axis=axis).astype(start.dtype, copy=False)


define_op("LinSpace", infer=_infer_linspace, kernel=_linspace_kernel)


@RegisterGradient("LinSpace")
def _linspace_grad(op, grad):
    """Element i is start + (stop - start) * t_i with t_i = i / (num - 1) (t_0 = 0)."""
    from gradflow.ops.math import multiply, reduce_sum, reduce_to_shape_of, subtract
    start, stop, num = op.inputs
    out = op.outputs[0]
    if out.shape.ndims is None:
        raise LookupError(f"Gradient of linspace needs an output of known rank "
                          f"(op '{op.name}')")
    a = op.get_attr("axis") % out.shape.ndims
    fractions = apply_op("LinSpace", [constant(0, dtype=start.dtype),
                                      constant(1, dtype=start.dtype), num], axis=0)
    fractions = reshape(fractions, [-1] + [1] * (out.shape.ndims - a - 1))
    grad = convert_to_tensor(grad)
    to_stop = reduce_sum(multiply(grad, fractions), a)
    to_start = subtract(reduce_sum(grad, a), to_stop)
    return reduce_to_shape_of(to_start, start), reduce_to_shape_of(to_stop, stop), None


def linspace(start, stop, num, name: Optional[str] = None, axis: int = 0) -> Tensor:
    """``num`` evenly spaced values from ``start`` to ``stop`` (both included).

    ``start`` and ``stop`` may be tensors broadcasting together; the values then run
    along ``axis``. Integer bounds give float64 values.
    """
    from gradflow.ops.math import cast
    start_t = convert_to_tensor(start)
    stop_t = as_tensor(stop, dtype=None if isinstance(stop, Tensor) or start_t.dtype.is_integer
                       else start_t.dtype, like=start_t)
    if start_t.dtype.is_integer:
        start_t, stop_t = cast(start_t, dtypes.float64), cast(stop_t, dtypes.float64)
    num_t = as_tensor(num, dtype=None if isinstance(num, Tensor) else dtypes.int32,
                      like=start_t)
    return apply_op("LinSpace", [start_t, stop_t, num_t], name=name or "LinSpace",
                    axis=int(axis))


lin_space = linspace


def meshgrid(*args, **kwargs) -> list[Tensor]:
    """Coordinate grids from 1-D coordinate vectors.

    ``indexing='xy'`` (default, Cartesian) swaps the first two output dimensions;
    ``'ij'`` gives matrix indexing. Keyword arguments: ``indexing``, ``name``.
    """
    indexing = kwargs.pop("indexing", "xy")
    name = kwargs.pop("name", "meshgrid")
    if kwargs:
        raise TypeError(f"'{next(iter(kwargs))}' is an invalid keyword argument for this "
                        "function")
    if indexing not in ("xy", "ij"):
        raise ValueError(f"Argument `indexing` parameter must be either 'xy' or 'ij', got "
                         f"'{indexing}'")
    with get_default_graph().name_scope(name):
        vectors = [convert_to_tensor(x) for x in args]
        count = len(vectors)
        shapes = [[1] * count for _ in vectors]
        for i, row in enumerate(shapes):
            row[i] = -1
        sizes = [size(x) for x in vectors]
        if indexing == "xy" and count > 1:
            for row in shapes:
                row[0], row[1] = row[1], row[0]
            sizes[0], sizes[1] = sizes[1], sizes[0]
        return [broadcast_to(reshape(x, row), sizes) for x, row in zip(vectors, shapes)]


# --------------------------------------------------------------------- diagonals
def _infer_diag(inputs, attrs):
    d = inputs[0]
    if d.shape.ndims == 0:
        raise ValueError(f"diag needs a tensor of rank at least 1, got the scalar {d.name}")
    return [(d.dtype, d.shape.concatenate(d.shape))]


def _infer_diag_part(inputs, attrs):
    x = inputs[0]
    dims = x.shape.as_tuple()
    if dims is None:
        return [(x.dtype, TensorShape(None))]
    half = len(dims) // 2
    if not dims or len(dims) % 2:
        raise ValueError(f"diag_part needs a tensor of even, non-zero rank, but {x.name} has "
                         f"shape {x.shape}")
    first, second = TensorShape.from_tuple(dims[:half]), TensorShape.from_tuple(dims[half:])
    if not first.is_compatible_with(second):
        raise ValueError(f"Dimensions must be equal, but are {first} and {second} for "
                         f"diag_part of {x.name} with shape {x.shape}")
    return [(x.dtype, first.merge_with(second))]


def _diag_part_kernel(x):
    half = x.ndim // 2
    if x.shape[:half] != x.shape[half:]:
        raise ValueError(f"diag_part needs an input of shape s + s, got {list(x.shape)}")
    count = int(np.prod(x.shape[:half], dtype=np.int64))
    return x.reshape(count, count).diagonal().reshape(x.shape[:half]).copy()


define_op("Diag", infer=_infer_diag,
          kernel=lambda d: np.diag(d.reshape(-1)).reshape(d.shape * 2))
define_op("DiagPart", infer=_infer_diag_part, kernel=_diag_part_kernel)


@RegisterGradient("Diag")
def _diag_grad(op, grad):
    return diag_part(grad)


@RegisterGradient("DiagPart")
def _diag_part_grad(op, grad):
    return diag(grad)


def diag(diagonal, name: Optional[str] = None) -> Tensor:
    """The tensor of rank 2k with ``diagonal`` (rank k) on its diagonal, zeros elsewhere."""
    return apply_op("Diag", [convert_to_tensor(diagonal)], name=name or "Diag")


def diag_part(input, name: Optional[str] = None) -> Tensor:  # noqa: A002
    """The diagonal ``x[i, j, ..., i, j, ...]`` of a tensor of rank 2k (inverse of ``diag``)."""
    return apply_op("DiagPart", [convert_to_tensor(input)], name=name or "DiagPart")


_ALIGNMENTS = ("LEFT_RIGHT", "RIGHT_LEFT", "LEFT_LEFT", "RIGHT_RIGHT")


def _diagonal_range(k) -> tuple[int, int]:
    """(lowest, highest) diagonal offset from a k of one or two ints."""
    values = [int(v) for v in np.asarray(k).reshape(-1)]
    if len(values) not in (1, 2):
        raise ValueError(f"k must be a scalar or a pair of diagonal offsets, got {values}")
    if values[0] > values[-1]:
        raise ValueError(f"lower_diag_index is greater than upper_diag_index: k = {values}")
    return values[0], values[-1]


def _static_range(k: Tensor) -> Optional[tuple[int, int]]:
    values = static_ints(k)
    return None if values is None else _diagonal_range(values)


def _diagonal_length(rows: int, cols: int, k: int) -> int:
    return max(min(rows + min(k, 0), cols - max(k, 0)), 0)


def _check_band_in_matrix(rows: int, cols: int, low: int, high: int) -> None:
    if rows and low <= -rows:
        raise ValueError(f"lower_diag_index is out of bound: k = {low} for a {rows} x {cols} "
                         "matrix")
    if cols and high >= cols:
        raise ValueError(f"upper_diag_index is out of bound: k = {high} for a {rows} x {cols} "
                         "matrix")


def _packed_positions(rows: int, cols: int, low: int, high: int, align: str) -> tuple:
    """Where diagonals ``low..high`` of a rows x cols matrix sit in their packed form.

    Returns (width, (r, c, d, p)): matrix element [r, c] is packed element [d, p], the
    packed form having one row d = high - k of length ``width`` per diagonal k. Shorter
    diagonals are padded on the left or right, as ``align`` says for superdiagonals
    (k >= 0) and for subdiagonals.
    """
    width = max(min(rows + min(high, 0), cols - max(low, 0)), 0)
    super_side, sub_side = align.split("_")
    parts = []
    for k in range(low, high + 1):
        steps = np.arange(_diagonal_length(rows, cols, k))
        side = super_side if k >= 0 else sub_side
        offset = width - steps.size if side == "RIGHT" else 0
        parts.append((steps + max(-k, 0), steps + max(k, 0), np.full(steps.size, high - k),
                      steps + offset))
    return width, tuple(np.concatenate(column) for column in zip(*parts))


def _diag_matrix_size(width: int, low: int, high: int, rows: int, cols: int) -> tuple[int, int]:
    """Rows and columns of the matrix built from diagonals of length ``width`` (-1: infer)."""
    min_rows, min_cols = width - min(high, 0), width + max(low, 0)
    if rows == -1 and cols == -1:
        rows = cols = max(min_rows, min_cols)
    elif rows == -1:
        rows = min_rows
    elif cols == -1:
        cols = min_cols
    if rows != min_rows and cols != min_cols or rows < min_rows or cols < min_cols:
        raise ValueError(f"num_rows and num_cols are not consistent with lower_diag_index, "
                         f"upper_diag_index, and the length of the given diagonals: "
                         f"num_rows = {rows}, min_num_rows = {min_rows}, num_cols = {cols}, "
                         f"min_num_cols = {min_cols}")
    return rows, cols


def _check_k_and_fill(k: Tensor, value: Optional[Tensor], x: Tensor, op_type: str) -> None:
    """Checks the diagonal offsets ``k`` and the scalar fill value of a matrix-diag op."""
    check_dtype_in(k, (dtypes.int32,), op_type, "k")
    _check_rank(k, (0, 1), f"k of {op_type}")
    if value is None:
        return
    if value.dtype is not x.dtype:
        raise TypeError(f"padding_value of {op_type} has dtype {value.dtype.name}, expected "
                        f"{x.dtype.name} like {x.name}")
    if value.shape.ndims not in (None, 0):
        raise ValueError(f"padding_value of {op_type} must be a scalar, got shape "
                         f"{value.shape}")


def _packed_shape(batch: tuple, low: int, high: int, width) -> tuple:
    """Shape of packed diagonals: [batch..., num_diags, width], or [batch..., width]."""
    return batch + ((high - low + 1,) if low != high else ()) + (width,)


def _infer_matrix_diag_part(inputs, attrs):
    x, k, padding = inputs
    _check_k_and_fill(k, padding, x, "MatrixDiagPartV3")
    dims, band = x.shape.as_tuple(), _static_range(k)
    if dims is not None and len(dims) < 2:
        raise ValueError(f"matrix_diag_part needs a tensor of rank at least 2, but {x.name} "
                         f"has shape {x.shape}")
    if dims is None or band is None:
        return [(x.dtype, TensorShape(None))]
    rows, cols = dims[-2:]
    width = None
    if rows is not None and cols is not None:
        _check_band_in_matrix(rows, cols, *band)
        width = _packed_positions(rows, cols, *band, attrs["align"])[0]
    return [(x.dtype, TensorShape.from_tuple(_packed_shape(dims[:-2], *band, width)))]


def _matrix_diag_part_kernel(x, k, padding_value, *, align):
    low, high = _diagonal_range(k)
    rows, cols = x.shape[-2:]
    _check_band_in_matrix(rows, cols, low, high)
    width, (r, c, d, p) = _packed_positions(rows, cols, low, high, align)
    out = np.full(x.shape[:-2] + (high - low + 1, width), padding_value, x.dtype)
    out[..., d, p] = x[..., r, c]
    return out if low != high else out[..., 0, :]


def _infer_matrix_diag(inputs, attrs):
    diagonal, k, num_rows, num_cols, padding = inputs
    _check_k_and_fill(k, padding, diagonal, "MatrixDiagV3")
    for t, arg in ((num_rows, "num_rows"), (num_cols, "num_cols")):
        check_dtype_in(t, (dtypes.int32,), "MatrixDiagV3", arg)
        _check_rank(t, (0,), f"{arg} of matrix_diag")
    dims, band = diagonal.shape.as_tuple(), _static_range(k)
    if dims is None or band is None:
        return [(diagonal.dtype, TensorShape(None))]
    low, high = band
    packed_rank = 1 if low == high else 2
    if len(dims) < packed_rank or (low != high and dims[-2] not in (None, high - low + 1)):
        raise ValueError(f"The diagonals {diagonal.name} (shape {diagonal.shape}) do not match "
                         f"the diagonal range k = [{low}, {high}]")
    sizes = (static_ints(num_rows), static_ints(num_cols))
    matrix = (None, None)
    if dims[-1] is not None and None not in sizes:
        matrix = _diag_matrix_size(dims[-1], low, high, sizes[0][0], sizes[1][0])
    return [(diagonal.dtype, TensorShape.from_tuple(dims[:-packed_rank] + matrix))]


def _matrix_diag_kernel(diagonal, k, num_rows, num_cols, padding_value, *, align):
    low, high = _diagonal_range(k)
    packed = diagonal if low != high else diagonal[..., None, :]
    rows, cols = _diag_matrix_size(packed.shape[-1], low, high, int(num_rows), int(num_cols))
    _, (r, c, d, p) = _packed_positions(rows, cols, low, high, align)
    out = np.full(packed.shape[:-2] + (rows, cols), padding_value, packed.dtype)
    out[..., r, c] = packed[..., d, p]
    return out


def _infer_matrix_set_diag(inputs, attrs):
    x, diagonal, k = inputs
    _check_k_and_fill(k, None, x, "MatrixSetDiagV3")
    if diagonal.dtype is not x.dtype:
        raise TypeError(f"diagonal {diagonal.name} of matrix_set_diag has dtype "
                        f"{diagonal.dtype.name}, expected {x.dtype.name} like {x.name}")
    dims, band = x.shape.as_tuple(), _static_range(k)
    if dims is not None and len(dims) < 2:
        raise ValueError(f"matrix_set_diag needs a tensor of rank at least 2, but {x.name} has "
                         f"shape {x.shape}")
    if dims is not None and band is not None and None not in dims[-2:]:
        _check_band_in_matrix(*dims[-2:], *band)
        width = _packed_positions(*dims[-2:], *band, attrs["align"])[0]
        expected = TensorShape.from_tuple(_packed_shape(dims[:-2], *band, width))
        if not expected.is_compatible_with(diagonal.shape):
            raise ValueError(f"diagonal of matrix_set_diag must have shape {expected} for "
                             f"{x.name} of shape {x.shape} and k = {list(band)}, but "
                             f"{diagonal.name} has shape {diagonal.shape}")
    return [(x.dtype, x.shape)]


def _matrix_set_diag_kernel(x, diagonal, k, *, align):
    low, high = _diagonal_range(k)
    rows, cols = x.shape[-2:]
    _check_band_in_matrix(rows, cols, low, high)
    width, (r, c, d, p) = _packed_positions(rows, cols, low, high, align)
    packed = diagonal if low != high else diagonal[..., None, :]
    if packed.shape != x.shape[:-2] + (high - low + 1, width):
        raise ValueError(f"diagonal has shape {list(diagonal.shape)}, expected "
                         f"{list(_packed_shape(x.shape[:-2], low, high, width))}")
    out = x.copy()
    out[..., r, c] = packed[..., d, p]
    return out


define_op("MatrixDiagPartV3", infer=_infer_matrix_diag_part, kernel=_matrix_diag_part_kernel)
define_op("MatrixDiagV3", infer=_infer_matrix_diag, kernel=_matrix_diag_kernel)
define_op("MatrixSetDiagV3", infer=_infer_matrix_set_diag, kernel=_matrix_set_diag_kernel)


def _fill_value_grad(op, grad, valid: Tensor):
    """Gradient of a padding value: the gradient of every element it filled."""
    from gradflow.ops.math import reduce_sum, subtract
    if not gradient_needed(op.inputs[-1]):
        return None
    return subtract(reduce_sum(grad), reduce_sum(valid))


@RegisterGradient("MatrixDiagPartV3")
def _matrix_diag_part_grad(op, grad):
    x, k, _ = op.inputs
    grad = convert_to_tensor(grad)
    dx = matrix_set_diag(zeros_like(x), grad, k=k, align=op.get_attr("align"))
    return dx, None, _fill_value_grad(op, grad, dx)


@RegisterGradient("MatrixDiagV3")
def _matrix_diag_grad(op, grad):
    k = op.inputs[1]
    grad = convert_to_tensor(grad)
    ddiagonal = matrix_diag_part(grad, k=k, align=op.get_attr("align"))
    return ddiagonal, None, None, None, _fill_value_grad(op, grad, ddiagonal)


@RegisterGradient("MatrixSetDiagV3")
def _matrix_set_diag_grad(op, grad):
    _, diagonal, k = op.inputs
    align = op.get_attr("align")
    dx = matrix_set_diag(grad, zeros_like(diagonal), k=k, align=align)
    return dx, matrix_diag_part(grad, k=k, align=align), None


def _matrix_diag_args(x: Tensor, k, align: str) -> tuple[Tensor, str]:
    if align not in _ALIGNMENTS:
        raise ValueError(f"align must be one of {', '.join(_ALIGNMENTS)}, got {align!r}")
    return as_tensor(k, dtype=None if isinstance(k, Tensor) else dtypes.int32, like=x), align


def _scalar_like(value, dtype: dtypes.DType, like: Tensor) -> Tensor:
    return as_tensor(value, dtype=None if isinstance(value, Tensor) else dtype, like=like)


def matrix_diag(diagonal, name: str = "diag", k=0, num_rows=-1, num_cols=-1,
                padding_value=0, align: str = "RIGHT_LEFT") -> Tensor:
    """Batched matrices with the given diagonals (offsets ``k``), ``padding_value`` elsewhere.

    ``k`` is one offset (``diagonal`` is [..., n]) or a range ``(low, high)`` (``diagonal``
    is [..., high - low + 1, n], top diagonal first). The matrix size is inferred (square)
    unless ``num_rows``/``num_cols`` say otherwise.
    """
    d = convert_to_tensor(diagonal)
    k_t, align = _matrix_diag_args(d, k, align)
    return apply_op("MatrixDiagV3", [d, k_t, _scalar_like(num_rows, dtypes.int32, d),
                                     _scalar_like(num_cols, dtypes.int32, d),
                                     _scalar_like(padding_value, d.dtype, d)],
                    name=name, align=align)


def matrix_diag_part(input, name: str = "diag_part", k=0, padding_value=0,  # noqa: A002
                     align: str = "RIGHT_LEFT") -> Tensor:
    """The diagonals ``k`` of batched matrices, packed as ``matrix_diag`` takes them."""
    x = convert_to_tensor(input)
    k_t, align = _matrix_diag_args(x, k, align)
    return apply_op("MatrixDiagPartV3", [x, k_t, _scalar_like(padding_value, x.dtype, x)],
                    name=name, align=align)


def matrix_set_diag(input, diagonal, name: str = "set_diag", k=0,  # noqa: A002
                    align: str = "RIGHT_LEFT") -> Tensor:
    """``input`` with its diagonals ``k`` replaced by ``diagonal``."""
    x = convert_to_tensor(input)
    k_t, align = _matrix_diag_args(x, k, align)
    return apply_op("MatrixSetDiagV3", [x, as_tensor(diagonal, dtype=None if isinstance(
        diagonal, Tensor) else x.dtype, like=x), k_t], name=name, align=align)


def _infer_band_part(inputs, attrs):
    x, num_lower, num_upper = inputs
    for t, arg in ((num_lower, "num_lower"), (num_upper, "num_upper")):
        _check_index_dtype(t, "MatrixBandPart", arg)
        _check_rank(t, (0,), f"{arg} of matrix_band_part")
    if x.shape.ndims is not None and x.shape.ndims < 2:
        raise ValueError(f"matrix_band_part needs a tensor of rank at least 2, but {x.name} "
                         f"has shape {x.shape}")
    return [(x.dtype, x.shape)]


def _band_part_kernel(x, num_lower, num_upper):
    rows, cols = x.shape[-2:]
    if num_lower > rows or num_upper > cols:
        raise ValueError(f"num_lower ({num_lower}) and num_upper ({num_upper}) must be negative "
                         f"or at most the number of rows ({rows}) and columns ({cols})")
    above = np.arange(cols)[None, :] - np.arange(rows)[:, None]
    keep = ((num_lower < 0) | (-above <= num_lower)) & ((num_upper < 0) | (above <= num_upper))
    return np.where(keep, x, np.zeros((), x.dtype))


define_op("MatrixBandPart", infer=_infer_band_part, kernel=_band_part_kernel)


@RegisterGradient("MatrixBandPart")
def _band_part_grad(op, grad):
    _, num_lower, num_upper = op.inputs
    return matrix_band_part(grad, num_lower, num_upper), None, None


def matrix_band_part(input, num_lower, num_upper, name: Optional[str] = None) -> Tensor:  # noqa: A002
    """Keeps ``num_lower`` subdiagonals and ``num_upper`` superdiagonals (negative: all)."""
    x = convert_to_tensor(input)
    return apply_op("MatrixBandPart", [x, _scalar_like(num_lower, dtypes.int64, x),
                                       _scalar_like(num_upper, dtypes.int64, x)],
                    name=name or "MatrixBandPart")


def eye(num_rows, num_columns=None, batch_shape=None, dtype=dtypes.float32,
        name: Optional[str] = None) -> Tensor:
    """Identity matrices (``num_rows`` x ``num_columns``), optionally batched."""
    from gradflow.ops.math import minimum
    with get_default_graph().name_scope(name or "eye") as scope:
        num_columns = num_rows if num_columns is None else num_columns
        if isinstance(num_rows, Tensor) or isinstance(num_columns, Tensor):
            diag_size = minimum(_scalar_like(num_rows, dtypes.int32, None),
                                _scalar_like(num_columns, dtypes.int32, None))
        else:
            diag_size = min(int(num_rows), int(num_columns))
        batch = _shape_tensor([] if batch_shape is None else batch_shape, name="batch_shape")
        diag_shape = concat([batch, _shape_tensor([diag_size], name="diag_size")], 0)
        return matrix_diag(ones(diag_shape, dtype=dtype), num_rows=num_rows,
                           num_cols=num_columns, name=scope)


def _getitem(self, key):
    """``tensor[key]``: several ops (the slice spec and the slice), added atomically."""
    with graph_for([self]).atomic():
        return _slice_helper(self, key)


Tensor.__getitem__ = _getitem
