"""Primitives both the array and the math ops' gradient rules use: shape, rank, reshape,
fill and zeros, stack and unstack, broadcasting, cast, conj, range, the basic binary ops,
select, reduce_sum and reduce_to_shape_of; and the helpers the array ops share (static
ints and shapes, dtype and rank checks, constant folding).

They sit below ``ops/array/`` and ``ops/math/`` so that neither family imports the other
back: array gradients need ``reduce_sum`` and ``cast``, math gradients need ``reshape``
and ``shape``. The public names are re-exported by ``gradflow.ops.array`` and
``gradflow.ops.math``.
"""
from __future__ import annotations

import builtins
import functools
from typing import Callable, Optional, Sequence

import numpy as np

from gradflow.framework import dtypes, errors
from gradflow.framework.constant import (constant, constant_value, convert_to_tensor, foldable,
                                         make_ndarray, register_static_value,
                                         register_tensor_conversion_function)
from gradflow.framework.graph import Tensor, get_default_graph
from gradflow.framework.registry import (NotDifferentiable, RegisterGradient, define_op,
                                         gradient_needed)
from gradflow.framework.tensor_shape import TensorShape
from gradflow.ops.common import (NUMERIC, REAL_NUMERIC, STATIC_LIST_LIMIT, apply_op, as_tensor,
                                 binary_operands, broadcast_shape, check_dtype_in, check_same_dtype,
                                 constructor, outer_scope, same_as_input, static_axes,
                                 static_ints)


INDEX_TYPES = (dtypes.int32, dtypes.int64)


# ------------------------------------------------------------------------ helpers
def partial_ints(t: Tensor) -> Optional[list]:
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
    """``partial_ints`` of a constant, a stack of scalars, a shape, or a slice of a shape."""
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
            return list(np.array(dims, dtype=object)[index_tuple(*bounds, op.attrs)])
    return [None] * length


def static_shape_of(t: Tensor) -> TensorShape:
    """A shape described by a 1-D int tensor, as far as it is known at build time."""
    values = partial_ints(t)
    if values is None:
        return TensorShape(None)
    return TensorShape([None if v is None or v < 0 else v for v in values])


def int_vector(values: Sequence[int], name: str = "Const") -> Tensor:
    """A 1-D int32 constant (also when ``values`` is empty)."""
    return constant(np.asarray(values, dtype=np.int32).reshape(-1), name=name)


def _stacked_ints(items: Sequence, name: str) -> Tensor:
    """Stacks ints and scalar int tensors into a 1-D tensor (int64 if any tensor is)."""
    for item in items:
        if isinstance(item, Tensor) and item.dtype not in INDEX_TYPES:
            raise TypeError(f"Shape and index entries must be int32 or int64, got "
                            f"{item.dtype.name} tensor {item.name}")
    wide = any(isinstance(d, Tensor) and d.dtype is dtypes.int64 for d in items)
    dtype = dtypes.int64 if wide else dtypes.int32
    # named as TF1's autopacking names them: the Pack is ``name``, a Python entry i is
    # the constant ``name/i`` (``Reshape/shape/1``)
    return _pack_nested(_cast_nested(items, dtype), dtype, name)


def shape_tensor(shape_like, name: str = "shape") -> Tensor:
    """A 1-D int tensor from a shape given as a list (may hold tensors), TensorShape or tensor."""
    if isinstance(shape_like, Tensor):
        return shape_like
    if isinstance(shape_like, TensorShape):
        shape_like = shape_like.as_list()
    if isinstance(shape_like, (list, tuple)) and any(isinstance(d, Tensor) for d in shape_like):
        return _stacked_ints(shape_like, name)
    values = np.asarray(shape_like)
    if values.dtype.kind == "O":  # Dimensions, or ints beyond 64 bits, None, ...
        try:
            values = np.asarray(shape_like, dtype=np.int64)
        except (OverflowError, TypeError, ValueError) as err:
            raise TypeError(f"Failed to convert elements of {shape_like!r} to Tensor. "
                            "Consider casting elements to a supported type.") from err
    wide = values.dtype.kind in "iu" and values.size and np.abs(values).max() >= 2 ** 31
    return constant(values.reshape(-1), dtype=dtypes.int64 if wide else dtypes.int32, name=name)


def check_index_dtype(t: Tensor, op_type: str, arg: str) -> None:
    check_dtype_in(t, INDEX_TYPES, op_type, arg)


def check_rank(t: Tensor, ranks: Sequence[int], what: str) -> None:
    """ValueError unless ``t``'s rank (when known) is one of ``ranks``."""
    if t.shape.ndims is not None and t.shape.ndims not in ranks:
        wanted = " or ".join(str(r) for r in ranks)
        raise ValueError(f"{what} must have rank {wanted}, but {t.name} has shape {t.shape}")


def normalized_axis(axis: int, ndims: int, what: str) -> int:
    """``axis`` in [0, ndims), accepting negative axes; ValueError when out of range."""
    if not -ndims <= axis < ndims:
        raise ValueError(f"{what}: axis {axis} is out of range [{-ndims}, {ndims}) for a "
                         f"tensor of rank {ndims}")
    return axis % ndims


def register_foldable(op_type: str) -> None:
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


# ------------------------------------------------------------- filled tensors
def _infer_fill(inputs, attrs):
    dims, value = inputs
    check_index_dtype(dims, "Fill", "dims")
    check_rank(dims, (1,), "dims of fill")
    if value.shape.ndims not in (None, 0):
        raise ValueError(f"value of fill must be a scalar, got shape {value.shape} "
                         f"({value.name})")
    shape_ = static_shape_of(dims)
    if any(d is not None and d < 0 for d in (partial_ints(dims) or ())):
        raise ValueError(f"dims of fill must be non-negative, got {partial_ints(dims)}")
    return [(value.dtype, shape_)]


define_op("Fill", infer=_infer_fill,
          kernel=lambda dims, value: np.full(tuple(dims), value, dtype=value.dtype))


register_foldable("Fill")


@RegisterGradient("Fill")
def _fill_grad(op, grad):
    return None, reduce_sum(grad)


@constructor("Fill", "dims", "value")
def fill(dims, value, name: Optional[str] = None) -> Tensor:
    """A tensor of shape ``dims`` filled with the scalar ``value``."""
    dims = shape_tensor(dims, name="dims")
    value = convert_to_tensor(value, name="value")
    return apply_op("Fill", [dims, value], name=name or "Fill")


# A filled tensor of a static shape with fewer elements is one Const (as TF1 folds it).
FOLDED_FILL_LIMIT = 1000


def filled(shape, value: int, dtype, name: str) -> Tensor:
    """``zeros``/``ones``: one Const named ``name`` (a constructor's scope) for a small
    static shape, else ``Fill`` of the shape (``shape_as_tensor``) and a ``Const``."""
    dtype = dtypes.as_dtype(dtype)
    if isinstance(shape, TensorShape):
        shape = shape.as_list()
    if not isinstance(shape, Tensor) and not (
            isinstance(shape, (list, tuple)) and any(isinstance(d, Tensor) for d in shape)):
        dims = np.asarray(shape, dtype=np.int64).reshape(-1)
        if (dims < 0).any():
            raise ValueError(f"Dimensions of shape must be non-negative, got {dims.tolist()}")
        if dims.prod() < FOLDED_FILL_LIMIT:
            return constant(np.full(dims, value, dtype.as_numpy_dtype), dtype=dtype, name=name)
        shape = shape_tensor(shape, name="shape_as_tensor")
    else:
        # a list holding tensors is autopacked (``zeros/packed``) before the value Const
        shape = shape_tensor(shape, name="packed")
    return fill(shape, constant(value, dtype=dtype, name="Const"), name=name)


@constructor("zeros", "shape", "dtype", single_op=False)
def zeros(shape, dtype=dtypes.float32, name: Optional[str] = None) -> Tensor:
    """A tensor of ``shape`` filled with zeros (``b''`` for strings, as TF)."""
    return filled(shape, b"" if dtypes.as_dtype(dtype) is dtypes.string else 0, dtype, name)


def _zeros_like_kernel(x):
    if np.asarray(x).dtype == object:  # a string tensor: TF's zero is b''
        return np.full(np.shape(x), b"", dtype=object)
    return np.zeros_like(x)


define_op("ZerosLike", infer=same_as_input, kernel=_zeros_like_kernel)


NotDifferentiable("ZerosLike")


@constructor("zeros_like", "tensor", "dtype", "optimize", single_op=False)
def zeros_like(tensor, dtype=None, name: Optional[str] = None, optimize: bool = True) -> Tensor:
    """Zeros shaped like ``tensor`` (of ``dtype``, default ``tensor``'s)."""
    tensor = convert_to_tensor(tensor)
    if dtype is not None and dtypes.as_dtype(dtype) is not tensor.dtype:
        return zeros(shape(tensor), dtype=dtype, name=name)
    return apply_op("ZerosLike", [tensor], name=name or "zeros_like")


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


def shape_out_type(out_type) -> dtypes.DType:
    """The int dtype of a shape query (int32 when None, as in TF)."""
    dtype = dtypes.int32 if out_type is None else dtypes.as_dtype(out_type)
    if dtype not in INDEX_TYPES:
        raise TypeError(f"out_type must be int32 or int64, got {dtype.name}")
    return dtype


@constructor("Shape", "input")
def shape(input, name: Optional[str] = None, out_type=None) -> Tensor:  # noqa: A002
    """The dynamic shape of ``input`` as a 1-D int tensor."""
    x = convert_to_tensor(input)
    return apply_op("Shape", [x], name=name or "Shape", out_type=shape_out_type(out_type))


define_op("Rank", infer=lambda inputs, attrs: [(dtypes.int32, TensorShape([]))],
          kernel=lambda x: np.asarray(np.ndim(x), dtype=np.int32))


NotDifferentiable("Rank")


@register_static_value("Rank")
def _rank_static(op):
    ndims = op.inputs[0].shape.ndims
    return None if ndims is None else np.asarray(ndims, np.int32)


@constructor("Rank", "input")
def rank(input, name: Optional[str] = None) -> Tensor:  # noqa: A002
    """The number of dimensions of ``input`` as a scalar int32 tensor."""
    return apply_op("Rank", [convert_to_tensor(input)], name=name or "Rank")


# ----------------------------------------------------------------------- reshape
def _infer_reshape(inputs, attrs):
    x, new_shape = inputs
    check_index_dtype(new_shape, "Reshape", "shape")
    check_rank(new_shape, (1,), "shape of reshape")
    target = partial_ints(new_shape)
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
                raise errors.InvalidShapeError(
                    f"Dimension size must be evenly divisible by {known} but is {count}",
                    f" (cannot reshape a tensor with {count} elements to shape {target}: "
                    f"input {x.name}, shape {x.shape})")
            target = [count // known if d == -1 else d for d in target]
        elif count != known:
            raise errors.InvalidShapeError(
                f"Cannot reshape a tensor with {count} elements to shape "
                f"[{','.join(map(str, target))}] ({known} elements)",
                f" (input {x.name}, shape {x.shape})")
    return [(x.dtype, TensorShape([None if d is None or d < 0 else d for d in target]))]


def _reshape_kernel(x, shape_):
    try:
        return np.reshape(x, tuple(shape_))
    except ValueError:
        known = int(np.prod([d for d in shape_ if d != -1], dtype=np.int64))
        wanted = f"requires a multiple of {known}" if -1 in list(shape_) else f"has {known}"
        raise errors.InvalidArgumentError(
            None, None, f"Input to reshape is a tensor with {x.size} values, but the "
            f"requested shape {wanted}") from None


define_op("Reshape", infer=_infer_reshape, kernel=_reshape_kernel)


register_foldable("Reshape")


@RegisterGradient("Reshape")
def _reshape_grad(op, grad):
    return reshape(grad, shape_of_input(op.inputs[0])), None


def shape_of_input(x: Tensor) -> Tensor:
    """``x``'s shape as a tensor: a constant when static (cheaper and foldable)."""
    if x.shape.is_fully_defined():
        return constant(np.asarray(x.shape.as_list(), dtype=np.int32), name="Shape")
    return shape(x)


@constructor("Reshape", "tensor", "shape")
def reshape(tensor, shape, name: Optional[str] = None) -> Tensor:  # noqa: F811 - TF arg name
    """``tensor``'s elements in a new shape; one entry of ``shape`` may be -1 (inferred)."""
    x = convert_to_tensor(tensor)
    return apply_op("Reshape", [x, shape_tensor(shape)], name=name or "Reshape")


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
    a = normalized_axis(attrs["axis"], len(dims) + 1, "stack")
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


@constructor("stack", "values", "axis", single_op=False)
def stack(values, axis: int = 0, name: str = "stack") -> Tensor:
    """Stacks same-shaped tensors along a new axis."""
    if isinstance(values, Tensor):
        if axis != 0:
            raise TypeError(f"Tensor {values.name} is not iterable: stack a list of tensors")
        return values
    items = [v if isinstance(v, _PYTHON_VALUES) else convert_to_tensor(v) for v in values]
    if not items:
        raise ValueError("stack needs at least one tensor")
    first = _first_tensor(items)
    if axis == 0:
        # TF1 converts the list as a whole: one Const named as the op when it holds no
        # tensor, else the autopacked Pack whose Python entry i is the Const ``stack/i``
        if first is not None:
            return _pack_nested(items, first.dtype, name)
        try:
            return constant(items, name=name)
        except (TypeError, ValueError):
            pass  # entries of different shapes: the Pack below says which
    # otherwise each Python entry i is converted alone, as ``stack/values_i``
    if first is None:
        first = convert_to_tensor(items[0], name="values_0")
    tensors = [as_tensor(v, dtype=first.dtype, like=first, name=f"values_{i}")
               for i, v in enumerate(items)]
    return apply_op("Pack", tensors, name=name, axis=axis)


# what ``stack`` keeps as Python values (converted by autopacking); anything else
# (a Variable, IndexedSlices) is converted to a tensor first
_PYTHON_VALUES = (list, tuple, np.ndarray, np.generic, int, float, complex, bool, str, bytes)


def _first_tensor(items) -> Optional[Tensor]:
    """The first tensor in a nested list or tuple, depth first (None when there is none)."""
    pending = [iter(items)]
    while pending:
        item = next(pending[-1], _END)
        if item is _END:
            pending.pop()
        elif isinstance(item, Tensor):
            return item
        elif isinstance(item, (list, tuple)):
            pending.append(iter(item))
    return None


_END = object()


def _autopacked(value, dtype=None, name: Optional[str] = None, as_ref: bool = False):
    """TF1's conversion of a (nested) list or tuple holding tensors, such as
    ``[tf.shape(x)[0], 3]``: one ``Pack`` per level that holds a tensor, named
    ``packed`` (or ``name``), of the first tensor's dtype unless ``dtype`` is given (the
    tensors are then cast to it). Lists without tensors go on to ``constant``."""
    first = _first_tensor(value)
    if first is None:
        return NotImplemented
    target = first.dtype if dtype is None else dtypes.as_dtype(dtype)
    if target is not first.dtype:
        value = _cast_nested(value, target)
    return _pack_nested(value, target, name or "packed")


def _cast_nested(items, dtype: dtypes.DType) -> list:
    return [cast(item, dtype) if isinstance(item, Tensor) else
            _cast_nested(item, dtype) if isinstance(item, (list, tuple)) else item
            for item in items]


def _pack_nested(items, dtype: dtypes.DType, name: str):
    """``items`` packed into a tensor when some level holds a tensor, else the list."""
    with get_default_graph().name_scope(name) as scope:
        converted, must_pack = [], False
        for index, item in enumerate(items):
            if isinstance(item, Tensor):
                if item.dtype is not dtype:
                    raise TypeError(f"Cannot convert a list containing a tensor of dtype "
                                    f"{item.dtype!r} to {dtype!r} (Tensor is: {item!r})")
                must_pack = True
            elif isinstance(item, (list, tuple)):
                item = _pack_nested(item, dtype, str(index))
                must_pack = must_pack or isinstance(item, Tensor)
            converted.append(item)
        if not must_pack:
            return converted
        tensors = [item if isinstance(item, Tensor) else constant(item, dtype=dtype, name=str(i))
                   for i, item in enumerate(converted)]
        return apply_op("Pack", tensors, name=scope, axis=0)


register_tensor_conversion_function((list, tuple), _autopacked)


def _infer_unpack(inputs, attrs):
    x = inputs[0]
    dims = x.shape.as_tuple()
    num = attrs["num"]
    if dims is None:
        return [(x.dtype, TensorShape(None))] * num
    a = normalized_axis(attrs["axis"], len(dims), f"unstack of {x.name}")
    if dims[a] is not None and dims[a] != num:
        raise ValueError(f"Cannot unstack {num} tensors from {x.name} whose dimension {a} "
                         f"is {dims[a]}")
    return [(x.dtype, TensorShape.from_tuple(dims[:a] + dims[a + 1:]))] * num


def _unpack_kernel(x, *, num, axis):
    if x.shape[axis] != num:
        raise ValueError(f"Input dimension {axis} has size {x.shape[axis]}, expected {num}")
    parts = tuple(np.moveaxis(x, axis, 0))
    if x.ndim == 1 and x.dtype == object:  # elements of a string vector stay object arrays
        parts = tuple(np.array(p, dtype=object) for p in parts)
    return parts if num != 1 else parts[0]


define_op("Unpack", infer=_infer_unpack, kernel=_unpack_kernel)


@RegisterGradient("Unpack")
def _unpack_grad(op, *grads):
    parts = [g if g is not None else zeros_like(t) for g, t in zip(grads, op.outputs)]
    return stack(parts, axis=op.get_attr("axis"))


@constructor("unstack", "value")
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


# ----------------------------------------------------------------- broadcasting
def _infer_broadcast_to(inputs, attrs):
    x, target = inputs
    check_index_dtype(target, "BroadcastTo", "shape")
    check_rank(target, (1,), "shape of broadcast_to")
    wanted = static_shape_of(target).as_tuple()
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


register_foldable("BroadcastTo")


@RegisterGradient("BroadcastTo")
def _broadcast_to_grad(op, grad):
    return reduce_to_shape_of(convert_to_tensor(grad), op.inputs[0]), None


@constructor("BroadcastTo", "input", "shape")
def broadcast_to(input, shape, name: Optional[str] = None) -> Tensor:  # noqa: A002
    """``input`` broadcast (NumPy rules) to ``shape``."""
    x = convert_to_tensor(input)
    return apply_op("BroadcastTo", [x, shape_tensor(shape)], name=name or "BroadcastTo")


def _broadcast_gradient_args_kernel(s0, s1):
    n = max(len(s0), len(s1))
    a = np.concatenate([np.ones(n - len(s0), s0.dtype), s0])
    b = np.concatenate([np.ones(n - len(s1), s1.dtype), s1])
    r0 = [i for i in builtins.range(n) if a[i] == 1 and b[i] != 1]
    r1 = [i for i in builtins.range(n) if b[i] == 1 and a[i] != 1]
    if any(a[i] != b[i] and a[i] != 1 and b[i] != 1 for i in builtins.range(n)):
        raise errors.InvalidArgumentError(None, None, f"Incompatible shapes: {list(s0)} vs. "
                                          f"{list(s1)}")
    return np.asarray(r0, s0.dtype), np.asarray(r1, s0.dtype)


define_op("BroadcastGradientArgs",
          infer=lambda inputs, attrs: [(inputs[0].dtype, TensorShape([None]))] * 2,
          kernel=_broadcast_gradient_args_kernel)


NotDifferentiable("BroadcastGradientArgs")


@constructor("BroadcastGradientArgs", "s0", "s1")
def broadcast_gradient_args(s0, s1, name: Optional[str] = None) -> list[Tensor]:
    """For shapes that broadcast together, the axes each side was broadcast along."""
    return apply_op("BroadcastGradientArgs", [convert_to_tensor(s0), convert_to_tensor(s1)],
                    name=name or "BroadcastGradientArgs")


UNKNOWN = object()  # a bound of a strided slice not known at build time


def index_tuple(begin, end, strides, masks: dict) -> tuple:
    """The NumPy index equivalent to a strided slice (None bounds become ``UNKNOWN``)."""
    def bound(v):
        return UNKNOWN if v is None else int(v)

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


COMPLEX = (dtypes.complex64, dtypes.complex128)


INDEX = (dtypes.int32, dtypes.int64)


def _same(dtype: dtypes.DType) -> dtypes.DType:
    return dtype


def to_bool(dtype: dtypes.DType) -> dtypes.DType:
    return dtypes.bool


def _broadcasts(a: tuple, b: tuple) -> bool:
    try:
        np.broadcast_shapes(a, b)
    except ValueError:
        return False
    return True


def _dims_text(dims: tuple) -> str:
    """A run-time shape as TF's kernel messages write it: ``[2,3]``."""
    return "[" + ",".join(str(d) for d in dims) + "]"


def elementwise_kernel(fn: Callable, result_dtype: Callable = _same) -> Callable:
    """``fn`` with NumPy's floating-point warnings off (inf and nan are answers here, as in
    TensorFlow) and its result in the op's dtype (SciPy computes float16 in float64)."""
    def kernel(x, *rest):
        with np.errstate(all="ignore"):
            try:
                result = fn(x, *rest)
            except ValueError:
                if len(rest) != 1 or _broadcasts(np.shape(x), np.shape(rest[0])):
                    raise
                raise errors.InvalidArgumentError(
                    None, None, f"Incompatible shapes: {_dims_text(np.shape(x))} vs. "
                    f"{_dims_text(np.shape(rest[0]))}") from None
        target = x.dtype if result_dtype is _same else \
            result_dtype(dtypes.as_dtype(x.dtype)).as_numpy_dtype
        return np.asarray(result).astype(target, copy=False)
    return kernel


def _register_gradient(op_type: str, rule: Optional[Callable]) -> None:
    """Registers ``rule``, or declares the op not differentiable when it is None."""
    if rule is None:
        NotDifferentiable(op_type)
    else:
        RegisterGradient(op_type)(rule)


# ----------------------------------------------------------------------------- cast
def _infer_cast(inputs, attrs):
    return [(attrs["DstT"], inputs[0].shape)]


_C_NAMES = {dtypes.float16: "half", dtypes.float32: "float", dtypes.float64: "double"}


def _cast_kernel(x, *, SrcT, DstT, Truncate=False):  # noqa: N803 - TF attr names
    if (SrcT is dtypes.string) != (DstT is dtypes.string):  # TF has no such kernel either
        raise errors.UnimplementedError(None, None, f"Cast {_C_NAMES.get(SrcT, SrcT.name)} to "
                                        f"{_C_NAMES.get(DstT, DstT.name)} is not supported")
    if x.dtype.kind == "c" and not DstT.is_complex:
        x = x.real
    return x.astype(DstT.as_numpy_dtype, copy=False)


define_op("Cast", infer=_infer_cast, kernel=_cast_kernel)


@RegisterGradient("Cast")
def _cast_grad(op, grad):
    source, target = op.get_attr("SrcT"), op.get_attr("DstT")
    if source.is_trainable and target.is_trainable:
        return cast(grad, source)
    return None


@constructor("Cast", "x")
def cast(x, dtype, name: Optional[str] = None) -> Tensor:
    """Converts ``x`` to ``dtype`` (complex to real keeps the real part)."""
    target = dtypes.as_dtype(dtype)
    x = convert_to_tensor(x, name="x")
    if x.dtype is target:
        return x
    return apply_op("Cast", [x], name=name or "Cast", SrcT=x.dtype, DstT=target,
                    Truncate=False)


# ------------------------------------------------------------ unary elementwise ops
def unary(op_type: str, kernel: Callable, allowed, derivative: Optional[Callable] = None,
           gradient: Optional[Callable] = None, result_dtype: Callable = _same) -> Callable:
    """Defines an elementwise op ``y = f(x)`` and returns its public constructor.

    ``derivative(x, y)`` builds f'(x) from the op's input and output, making the rule
    ``grad * conj(f'(x))``; a whole rule ``gradient(op, grad)`` may be given instead.
    With neither, the op is not differentiable.
    """
    define_op(op_type, kernel=elementwise_kernel(kernel, result_dtype),
              infer=lambda inputs, attrs: [(result_dtype(inputs[0].dtype), inputs[0].shape)])
    rule = gradient
    if derivative is not None:
        def rule(op, grad):
            return multiply(grad, conj(derivative(op.inputs[0], op.outputs[0])))
    _register_gradient(op_type, rule)

    @constructor(op_type, "x")
    def build(x, name: Optional[str] = None) -> Tensor:
        x = convert_to_tensor(x, name="x")
        check_dtype_in(x, allowed, op_type)
        return apply_op(op_type, [x], name=name or op_type)

    build.__name__ = op_type.lower()
    build.__doc__ = f"Elementwise ``{op_type}`` of ``x``."
    return build


_conj = unary("Conj", np.conj, COMPLEX, gradient=lambda op, grad: conj(grad))


@constructor("Conj", "x")
def conj(x, name: Optional[str] = None) -> Tensor:
    """Complex conjugate; a real numeric tensor is returned as it is (no op added)."""
    x = convert_to_tensor(x, name="x")
    if x.dtype.is_complex:
        return _conj(x, name=name)
    if not x.dtype.is_numeric:
        raise TypeError(f"Expected numeric or variant tensor, got dtype {x.dtype!r} "
                        f"({x.name}).")
    return x


# ----------------------------------------------------------- binary elementwise ops
def binary(op_type: str, kernel: Callable, default_name: str, allowed=NUMERIC,
            result_dtype: Callable = _same) -> Callable:
    """Defines a broadcasting binary op and returns its public constructor."""
    def infer(inputs, attrs):
        x, y = inputs
        check_same_dtype(x, y, op_type)
        return [(result_dtype(x.dtype), broadcast_shape(x.shape, y.shape,
                                                        lambda: f"{x.name} and {y.name}"))]

    define_op(op_type, infer=infer, kernel=kernel)

    @constructor(default_name, "x", "y")
    def build(x, y, name: Optional[str] = None) -> Tensor:
        x, y = binary_operands(x, y, op_type)
        check_dtype_in(x, allowed, op_type)
        return apply_op(op_type, [x, y], name=name or default_name)

    build.__name__ = default_name.lower()
    build.__doc__ = f"Elementwise ``{op_type}`` of ``x`` and ``y``, with broadcasting."
    return build


def integer_division(fn: Callable) -> Callable:
    """A division-like kernel; dividing integers by zero is an error, as in TensorFlow."""
    def kernel(x, y):
        if y.dtype.kind in "iu" and not np.all(y):
            raise ZeroDivisionError("Integer division by zero")
        return fn(x, y)
    return elementwise_kernel(kernel)


def _floor_divide(x, y):
    # floats: floor of the rounded quotient, as TensorFlow (NumPy's // can be one less)
    return np.floor_divide(x, y) if x.dtype.kind in "iu" else np.floor(x / y)


_add_numbers = binary("AddV2", np.add, "Add")
# TF's older Add op: the one TF builds for strings (concatenation), and in imported graphs
_add_any = binary("Add", np.add, "Add", allowed=NUMERIC + (dtypes.string,))


def _is_text(value) -> bool:
    """Whether an operand of ``add`` is a string (a tensor, str/bytes, an array or list)."""
    if isinstance(value, Tensor):
        return value._dtype is dtypes.string
    if isinstance(value, np.ndarray):
        return value.dtype.kind in "OSU"
    while isinstance(value, (list, tuple)) and value:
        value = value[0]
    return isinstance(value, (str, bytes))


@functools.wraps(_add_numbers)
def add(x, y, name: Optional[str] = None) -> Tensor:
    """``x + y`` with broadcasting (``AddV2``); strings concatenate (``Add``), as in TF."""
    if type(x) is Tensor and type(y) is Tensor and x._dtype is not dtypes.string:
        return _add_numbers(x, y, name=name)
    if (_is_text(x) or _is_text(y)) and not any(
            isinstance(v, Tensor) and v._dtype is not dtypes.string for v in (x, y)):
        return _add_any(x, y, name=name)
    return _add_numbers(x, y, name=name)


subtract = binary("Sub", np.subtract, "Sub")


multiply = binary("Mul", np.multiply, "Mul")


floordiv = binary("FloorDiv", integer_division(_floor_divide), "floordiv", REAL_NUMERIC)


maximum = binary("Maximum", np.maximum, "Maximum", REAL_NUMERIC)


minimum = binary("Minimum", np.minimum, "Minimum", REAL_NUMERIC)


less_equal = binary("LessEqual", np.less_equal, "LessEqual", REAL_NUMERIC, to_bool)


greater_equal = binary("GreaterEqual", np.greater_equal, "GreaterEqual", REAL_NUMERIC,
                        to_bool)


# ------------------------------------------------------------- binary op gradients
def reduce_to_shape_of(grad: Tensor, x: Tensor) -> Tensor:
    """Sums ``grad`` over the axes along which ``x`` was broadcast to ``grad``'s shape."""
    g_dims, x_dims = grad.shape.as_tuple(), x.shape.as_tuple()
    if g_dims == x_dims and grad.shape.is_fully_defined():
        return grad
    if grad.shape.is_fully_defined() and x.shape.is_fully_defined():
        lead = len(g_dims) - len(x_dims)
        axes = list(builtins.range(lead)) + [lead + i for i, d in enumerate(x_dims)
                                             if d == 1 and g_dims[lead + i] != 1]
        summed = reduce_sum(grad, axes) if axes else grad
        return summed if summed.shape.as_tuple() == x_dims else reshape(summed, x_dims)
    x_shape = shape(x)
    axes, _ = broadcast_gradient_args(x_shape, shape(grad))
    return reshape(reduce_sum(grad, axes), x_shape)


def _broadcast_axes(dims: Optional[tuple], other: Optional[tuple]) -> Optional[list]:
    """The axes along which a ``dims``-shaped operand was broadcast against ``other``,
    when the static shapes tell (an unknown size facing a size-1 or missing one is
    the output's own size); None when only the run-time shapes can."""
    if dims is None or other is None:
        return None
    rank = max(len(dims), len(other))
    lead = rank - len(dims)
    other = (1,) * (rank - len(other)) + tuple(other)
    axes = list(builtins.range(lead))
    for i, d in enumerate(dims):
        facing = other[lead + i]
        if facing == 1 or (d is not None and d != 1):
            continue
        if d != 1 or facing is None:
            return None
        axes.append(lead + i)
    return axes


def binary_grads(op, gx: Optional[Callable], gy: Optional[Callable]):
    """Applies the per-input rules only where a gradient is needed, then unbroadcasts.

    As TF1's rules: an operand not broadcast takes its gradient as is; otherwise the
    operands' ``Shape``s come first, then (when the static shapes do not tell the
    broadcast axes) one ``BroadcastGradientArgs``, then each ``Sum`` and ``Reshape``.
    """
    x, y = op.inputs
    need_x = gx is not None and gradient_needed(x)
    need_y = gy is not None and gradient_needed(y)
    x_dims, y_dims = x.shape.as_tuple(), y.shape.as_tuple()
    if x_dims == y_dims and x_dims is not None and None not in x_dims:
        return gx() if need_x else None, gy() if need_y else None  # nothing broadcast
    axes = [_broadcast_axes(x_dims, y_dims) if need_x else [],
            _broadcast_axes(y_dims, x_dims) if need_y else []]
    if axes == [[], []]:
        return gx() if need_x else None, gy() if need_y else None
    shapes = [shape_of_input(x), shape_of_input(y)]
    if None in axes:
        axes = broadcast_gradient_args(*shapes)
    grads = []
    for need, rule, reduce_axes, to_shape in zip((need_x, need_y), (gx, gy), axes, shapes,
                                                 strict=True):
        if not need:
            grads.append(None)
        elif isinstance(reduce_axes, list) and not reduce_axes:
            grads.append(rule())
        else:
            grads.append(reshape(reduce_sum(rule(), reduce_axes), to_shape))
    return tuple(grads)


@RegisterGradient("Add")
@RegisterGradient("AddV2")
def _add_grad(op, grad):
    return binary_grads(op, lambda: grad, lambda: grad)


@RegisterGradient("Sub")
def _sub_grad(op, grad):
    return binary_grads(op, lambda: grad, lambda: -grad)


@RegisterGradient("Mul")
def _mul_grad(op, grad):
    x, y = op.inputs
    # TF1's names: ``Mul`` and ``Mul_1``
    return binary_grads(op, lambda: multiply(grad, conj(y), name="Mul"),
                        lambda: multiply(conj(x), grad, name="Mul"))


def _min_max_grad(op, grad, x_wins: Callable):
    x, y = op.inputs
    mask = x_wins(x, y)
    zeros = zeros_like(grad)
    return binary_grads(op, lambda: where_v2(mask, grad, zeros),
                         lambda: where_v2(mask, zeros, grad))


@RegisterGradient("Maximum")
def _maximum_grad(op, grad):
    return _min_max_grad(op, grad, greater_equal)


@RegisterGradient("Minimum")
def _minimum_grad(op, grad):
    return _min_max_grad(op, grad, less_equal)


define_op("Where", kernel=lambda x: np.argwhere(x).astype(np.int64),
          infer=lambda inputs, attrs: [(dtypes.int64, TensorShape([None, inputs[0].shape.ndims]))])


NotDifferentiable("Where")


def true_coordinates(condition, name: Optional[str]) -> Tensor:
    """The coordinates of the true (non-zero) elements: int64 of shape [count, rank]."""
    cond = convert_to_tensor(condition, name="condition")
    check_dtype_in(cond, NUMERIC + (dtypes.bool,), "Where", "condition")
    return apply_op("Where", [cond], name=name or "Where")


def branches(condition, x, y, op_type: str, name: Optional[str]) -> Tensor:
    x, y = binary_operands(x, y, op_type)
    cond = as_tensor(condition, name="condition", like=x)
    return apply_op(op_type, [cond, x, y], name=name or op_type)


@constructor("SelectV2", "condition", "x", "y")
def select_v2(condition, x, y, name: Optional[str] = None) -> Tensor:
    """Elementwise ``x if condition else y`` with broadcasting of all three."""
    return branches(condition, x, y, "SelectV2", name)


def check_both_or_neither(x, y) -> None:
    if (x is None) != (y is None):
        raise ValueError("x and y must both be non-None or both be None.")


@constructor("SelectV2", "condition", "x", "y", single_op=False)
def where_v2(condition, x=None, y=None, name: Optional[str] = None) -> Tensor:
    """Like :func:`where`, but condition, x and y broadcast against each other."""
    check_both_or_neither(x, y)
    if x is None:
        return true_coordinates(condition, name)
    return select_v2(condition, x, y, name=name)


# --------------------------------------------------------------------------- range
def _infer_range(inputs, attrs):
    start, limit, delta = (constant_value(t) for t in inputs)
    if start is None or limit is None or delta is None:
        return [(inputs[0].dtype, TensorShape([None]))]
    fault = _range_fault(start, limit, delta)
    if fault is not None:
        raise ValueError(f"{fault} for node Range with computed inputs start = {start}, "
                         f"limit = {limit}, delta = {delta}")
    count = builtins.max(0, int(np.ceil((limit - start) / delta)))
    return [(inputs[0].dtype, TensorShape([count]))]


def _range_fault(start, limit, delta) -> Optional[str]:
    """TF's message for bounds that make no range, else None."""
    if delta == 0:
        return f"Requires delta != 0: {delta}"
    if delta > 0 and start > limit:
        return f"Requires start <= limit when delta > 0: {start}/{limit}"
    if delta < 0 and start < limit:
        return f"Requires start >= limit when delta < 0: {start}/{limit}"
    return None


def _range_kernel(start, limit, delta):
    fault = _range_fault(start, limit, delta)
    if fault is not None:
        raise errors.InvalidArgumentError(None, None, fault)
    return np.arange(start, limit, delta, dtype=start.dtype)


define_op("Range", infer=_infer_range, kernel=_range_kernel)


NotDifferentiable("Range")


@register_static_value("Range")
def _range_static(op):
    if not foldable(op):
        return None
    bounds = [constant_value(t) for t in op.inputs]
    return None if any(b is None for b in bounds) else _range_kernel(*bounds)


def _range_int_dtype(value) -> dtypes.DType:
    """int32 for a bound int32 holds, else int64 (TF infers int64 for large ints)."""
    return dtypes.int32 if make_ndarray(value).dtype == np.int32 else dtypes.int64


@constructor("range", "start", "limit", "delta", "dtype", single_op=False)
def range(start, limit=None, delta=1, dtype=None, name: str = "range") -> Tensor:  # noqa: A001
    """Numbers from ``start`` (default 0) up to ``limit`` by ``delta``, like Python's range."""
    if limit is None:
        start, limit = 0, start
    values = [start, limit, delta]
    tensors = [v for v in values if isinstance(v, Tensor)]
    if dtype is None:
        candidates = [t.dtype for t in tensors] + [
            dtypes.float32 if isinstance(v, float) else _range_int_dtype(v)
            for v in values if not isinstance(v, Tensor)]
        order = [dtypes.int32, dtypes.int64, dtypes.float32, dtypes.float64]
        dtype = builtins.max(candidates, key=order.index)
    dtype = dtypes.as_dtype(dtype)
    start_t, limit_t, delta_t = (
        cast(as_tensor(v, dtype=None if isinstance(v, Tensor) else dtype, name=arg), dtype)
        for v, arg in zip(values, ("start", "limit", "delta"), strict=True))
    return apply_op("Range", [start_t, limit_t, delta_t], name=name)


# --------------------------------------------------------------------- reductions
def _axis_tensor(x: Tensor, axis, scope: Optional[str]) -> Tensor:
    """A reduction's axes; all axes when None: a constant made beside the op (as TF1
    names it, outside the reduction's scope ``scope``), or a range of the rank."""
    if axis is None:
        with get_default_graph().name_scope(outer_scope(scope or "")):
            if x.shape.ndims is not None:
                return constant(np.arange(x.shape.ndims, dtype=np.int32), name="Const")
            return range(0, rank(x))
    return as_tensor(axis, dtype=None if isinstance(axis, Tensor) else dtypes.int32,
                     name="reduction_indices", like=x)


def _infer_reduction(inputs, attrs):
    x, axis = inputs
    if axis.dtype not in INDEX:
        raise TypeError(f"Reduction axes {axis.name} must be int32 or int64, got "
                        f"{axis.dtype.name}")
    ndims = x.shape.ndims
    axes = static_axes(axis, ndims, f"input {x.name} of shape {x.shape}")
    keep = attrs["keep_dims"]
    if axes is None:
        if keep and ndims is not None:
            return [(x.dtype, TensorShape([None] * ndims))]
        return [(x.dtype, TensorShape(None))]
    dims = x.shape.as_tuple()
    if keep:
        out = tuple(1 if i in axes else d for i, d in enumerate(dims))
    else:
        out = tuple(d for i, d in enumerate(dims) if i not in axes)
    return [(x.dtype, TensorShape.from_tuple(out))]


def _reduce_kernel(reduce: Callable) -> Callable:
    """A reduction kernel from ``reduce(x, axes, keepdims)``, answering in ``x``'s dtype."""
    def kernel(x, axis, *, keep_dims):
        with np.errstate(all="ignore"):
            result = reduce(x, tuple(int(a) for a in np.asarray(axis).reshape(-1)), keep_dims)
        return np.asarray(result).astype(x.dtype, copy=False)
    return kernel


def accumulator(dtype: np.dtype):
    """The type sums are accumulated in: float16 in float32, as in TensorFlow."""
    return np.float32 if dtype == np.float16 else dtype


def _sum(x, axes, keepdims):
    return np.sum(x, axis=axes, keepdims=keepdims, dtype=accumulator(x.dtype))


def _reduced_shape_kernel(input_shape, axes):
    out = np.array(input_shape, copy=True)
    out[np.asarray(axes, dtype=np.int64).reshape(-1) % builtins.max(len(out), 1)] = 1
    return out


define_op("ReducedShape", infer=lambda inputs, attrs: [(inputs[0].dtype, inputs[0].shape)],
          kernel=_reduced_shape_kernel)


NotDifferentiable("ReducedShape")


def keep_reduced_dims(op, t: Tensor) -> Tensor:
    """``t``, shaped like a reduction's output, reshaped to keep the reduced axes as 1s."""
    x, axis = op.inputs
    dims = x.shape.as_tuple()
    axes = static_axes(axis, None if dims is None else len(dims))
    if axes is not None:
        kept = tuple(1 if i in axes else d for i, d in enumerate(dims))
        if t.shape.as_tuple() == kept:
            return t
        if None not in kept:
            return reshape(t, kept)
    kept_shape = apply_op("ReducedShape", [shape(x), axis], name="ReducedShape")
    return reshape(t, kept_shape)


def broadcast_reduction_grad(op, grad) -> Tensor:
    """Spreads the gradient of a reduction back over the reduced axes."""
    x = op.inputs[0]
    kept = keep_reduced_dims(op, grad)
    if not x.shape.is_fully_defined():
        return broadcast_to(kept, shape(x))
    dims = x.shape.as_tuple()
    return kept if kept.shape.as_tuple() == dims else broadcast_to(kept, dims)


def _sum_grad(op, grad):
    return broadcast_reduction_grad(op, grad), None


def reduction_args(axis, reduction_indices, keepdims, keep_dims) -> tuple:
    """TF1's aliases: ``reduction_indices`` for ``axis``, ``keep_dims`` for ``keepdims``."""
    if axis is not None and reduction_indices is not None:
        raise ValueError("Cannot specify both 'axis' and 'reduction_indices'.")
    if keepdims is not None and keep_dims is not None:
        raise ValueError("Cannot specify both 'keepdims' and 'keep_dims'.")
    keep = keepdims if keepdims is not None else keep_dims
    return (reduction_indices if axis is None else axis), builtins.bool(keep)


def reduction(op_type: str, reduce: Callable, allowed, gradient: Optional[Callable]) -> Callable:
    """Defines a reduction op and returns its ``reduce_xxx`` constructor (TF1 signature)."""
    define_op(op_type, infer=_infer_reduction, kernel=_reduce_kernel(reduce))
    _register_gradient(op_type, gradient)

    @constructor(op_type, "input_tensor", "axis")
    def build(input_tensor, axis=None, keepdims=None, name: Optional[str] = None,
              reduction_indices=None, keep_dims=None) -> Tensor:
        axis, keep = reduction_args(axis, reduction_indices, keepdims, keep_dims)
        x = convert_to_tensor(input_tensor, name="input_tensor")
        check_dtype_in(x, allowed, op_type, "input")
        return apply_op(op_type, [x, _axis_tensor(x, axis, name)], name=name or op_type,
                        keep_dims=keep)

    build.__name__ = f"reduce_{op_type.lower()}"
    build.__doc__ = f"{op_type} of ``input_tensor`` over ``axis`` (all axes when None)."
    return build


reduce_sum = reduction("Sum", _sum, NUMERIC, _sum_grad)
