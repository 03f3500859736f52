"""Shape ops: shape_n and size, expand_dims and squeeze, transpose and invert_permutation."""
from __future__ import annotations

from typing import Optional

import numpy as np

from gradflow.framework import dtypes, errors
from gradflow.framework.constant import (constant, constant_value, convert_to_tensor,
                                         register_static_value)
from gradflow.framework.graph import Tensor, get_default_graph
from gradflow.framework.registry import NotDifferentiable, RegisterGradient, define_op
from gradflow.framework.tensor_shape import TensorShape
from gradflow.ops.common import apply_op, as_tensor, constructor, same_as_input, static_ints
from gradflow.ops.primitives import (check_index_dtype, check_rank, conj, normalized_axis,
                                     range as range_op, rank, register_foldable, reshape, shape,
                                     shape_of_input, shape_out_type, shape_tensor, subtract)


@constructor("ShapeN", "input", "out_type", single_op=False)
def shape_n(input, out_type=dtypes.int32, name: Optional[str] = None) -> list[Tensor]:  # noqa: A002
    """The shapes of a list of tensors."""
    with get_default_graph().name_scope(name or "ShapeN"):
        return [shape(x, out_type=out_type) for x in input]


define_op("Size", infer=lambda inputs, attrs: [(attrs["out_type"], TensorShape([]))],
          kernel=lambda x, *, out_type: np.asarray(np.size(x), dtype=out_type.as_numpy_dtype))


NotDifferentiable("Size")


@register_static_value("Size")
def _size_static(op):
    count = op.inputs[0].shape.num_elements()
    return None if count is None else np.asarray(count, op.get_attr("out_type").as_numpy_dtype)


@constructor("Size", "input")
def size(input, name: Optional[str] = None, out_type=None) -> Tensor:  # noqa: A002
    """The number of elements of ``input`` as a scalar int tensor (a Const when the
    static shape tells it, as TF1's)."""
    x = convert_to_tensor(input)
    out_type = shape_out_type(out_type)
    count = x.shape.num_elements()
    if count is not None:
        return constant(np.asarray(count, out_type.as_numpy_dtype), name=name or "Size")
    return apply_op("Size", [x], name=name or "Size", out_type=out_type)


def _infer_expand_dims(inputs, attrs):
    x, axis = inputs
    check_index_dtype(axis, "ExpandDims", "axis")
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


register_foldable("ExpandDims")


@RegisterGradient("ExpandDims")
def _expand_dims_grad(op, grad):
    return reshape(grad, shape_of_input(op.inputs[0])), None


@constructor("ExpandDims", "input", "axis")
def expand_dims(input, axis=None, name: Optional[str] = None, dim=None) -> Tensor:  # noqa: A002
    """Inserts a dimension of size 1 at ``axis`` (``dim`` is the deprecated name)."""
    if axis is not None and dim is not None:
        raise ValueError("Cannot specify both 'axis' and 'dim'")
    axis = dim if axis is None else axis
    if axis is None:
        raise ValueError("Must specify an axis argument to gf.expand_dims()")
    x = convert_to_tensor(input)
    return apply_op("ExpandDims", [x, as_tensor(axis, dtype=None if isinstance(axis, Tensor)
                                                else dtypes.int32, name="dim", like=x)],
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
            a = normalized_axis(a, len(dims), f"squeeze of {x.name}")
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


register_foldable("Squeeze")


@RegisterGradient("Squeeze")
def _squeeze_grad(op, grad):
    return reshape(grad, shape_of_input(op.inputs[0]))


@constructor("Squeeze", "input")
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
    check_index_dtype(perm, "Transpose", "perm")
    check_rank(perm, (1,), "perm of transpose")
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


register_foldable("Transpose")


@RegisterGradient("Transpose")
def _transpose_grad(op, grad):
    return transpose(grad, invert_permutation(op.inputs[1])), None


def _infer_invert_permutation(inputs, attrs):
    check_index_dtype(inputs[0], "InvertPermutation", "x")
    check_rank(inputs[0], (1,), "x of invert_permutation")
    return same_as_input(inputs, attrs)


def _permutation_error(p: np.ndarray) -> Optional[str]:
    """TF's message for a ``p`` that is not a permutation of 0..n-1, else None."""
    if p.dtype.kind not in "iu":  # not folded: building the op raises TypeError
        return "invert_permutation expects integers."
    if p.ndim != 1:
        return "invert_permutation expects a 1D vector."
    n = p.size
    outside = np.flatnonzero((p < 0) | (p >= n))
    order = np.argsort(p, kind="stable")  # repeats of a value: later positions follow
    ordered = p[order]
    repeats = order[1:][ordered[1:] == ordered[:-1]]
    # TF reports the first offending position, whichever its fault
    first_outside = outside[0] if outside.size else n
    first_repeat = repeats.min() if repeats.size else n
    if first_outside < first_repeat:
        return f"{p[first_outside]} is not between 0 and {n}"
    if first_repeat < n:
        return f"{p[first_repeat]} is duplicated in the input."
    return None


def _invert_permutation_kernel(p):
    message = _permutation_error(p)
    if message is not None:
        raise errors.InvalidArgumentError(None, None, message)
    return np.argsort(p).astype(p.dtype)


define_op("InvertPermutation", infer=_infer_invert_permutation,
          kernel=_invert_permutation_kernel)


NotDifferentiable("InvertPermutation")


@register_static_value("InvertPermutation")
def _invert_permutation_static(op):
    perm = constant_value(op.inputs[0])
    if perm is None or _permutation_error(perm) is not None:
        return None  # not folded: running the op reports the error
    return np.argsort(perm).astype(perm.dtype)


@constructor("InvertPermutation", "x")
def invert_permutation(x, name: Optional[str] = None) -> Tensor:
    """The inverse of the permutation ``x``: ``y[x[i]] = i``."""
    x = convert_to_tensor(x, name="x")
    known = constant_value(x)
    if known is not None and _permutation_error(known) is None:
        return constant(np.argsort(known).astype(known.dtype), name=name or "InvertPermutation")
    return apply_op("InvertPermutation", [x], name=name or "InvertPermutation")


@constructor("transpose", "a", "perm", "conjugate", single_op=False)
def transpose(a, perm=None, name: str = "transpose", conjugate: bool = False) -> Tensor:
    """Permutes dimensions (reverses them when ``perm`` is None)."""
    x = convert_to_tensor(a)
    if perm is None:
        if x.shape.ndims is None:
            perm = subtract(subtract(rank(x), 1), range_op(0, rank(x)))
        else:
            perm = list(range(x.shape.ndims - 1, -1, -1))
    result = apply_op("Transpose", [x, shape_tensor(perm, name="perm")], name=name)
    if conjugate and x.dtype.is_complex:
        result = conj(result)
    return result
