"""Slicing and its adjoints: slice, strided_slice and ``tensor[key]``, padding, tiling,
reversing and boolean masks.

Linear ops come in adjoint pairs (Pad/Slice, StridedSlice/StridedSliceGrad,
BooleanMask/BooleanMaskGrad...): the gradient of each is the other.
"""
from __future__ import annotations

import builtins
from typing import Optional, Sequence

import numpy as np

from gradflow.framework import dtypes
from gradflow.framework.constant import constant, constant_value, convert_to_tensor
from gradflow.framework.graph import Tensor, op_scope
from gradflow.framework.registry import RegisterGradient, define_op, gradient_needed
from gradflow.framework.tensor_shape import TensorShape
from gradflow.ops.array.shapes import size, transpose
from gradflow.ops.array.sources import ones_like
from gradflow.ops.common import apply_op, as_tensor, constructor, static_ints
from gradflow.ops.primitives import (INDEX_TYPES, UNKNOWN, cast, check_index_dtype, check_rank,
                                     index_tuple, int_vector, partial_ints, range as range_op,
                                     reduce_sum, register_foldable, reshape, shape, shape_of_input,
                                     shape_tensor, stack, static_shape_of, subtract)


# ------------------------------------------------------- tiling, padding, reversing
def _infer_tile(inputs, attrs):
    x, multiples = inputs
    check_index_dtype(multiples, "Tile", "multiples")
    check_rank(multiples, (1,), "multiples of tile")
    dims = x.shape.as_tuple()
    reps = partial_ints(multiples)
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


register_foldable("Tile")


@RegisterGradient("Tile")
def _tile_grad(op, grad):
    """Views the gradient as [m0, d0, m1, d1, ...] and sums over the copies (even axes)."""
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


@constructor("Tile", "input", "multiples")
def tile(input, multiples, name: Optional[str] = None) -> Tensor:  # noqa: A002
    """Repeats ``input`` ``multiples[i]`` times along dimension i."""
    x = convert_to_tensor(input)
    return apply_op("Tile", [x, shape_tensor(multiples, name="multiples")],
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
    check_index_dtype(paddings, "Pad", "paddings")
    check_rank(paddings, (2,), "paddings of pad")
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
    if x.dtype == object:  # strings: TF pads with b'' (np.pad would make np.bytes_)
        fill = b"" if isinstance(constant_values, int) else np.asarray(constant_values).item()
        out = np.full([d + a + b for d, (a, b) in zip(x.shape, pairs, strict=True)], fill,
                      dtype=object)
        out[tuple(np.s_[a:a + d] for d, (a, _) in zip(x.shape, pairs, strict=True))] = x
        return out
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
    x, paddings, value = op.inputs
    dx = slice(grad, _pad_begin(paddings), shape_of_input(x))
    dvalue = subtract(reduce_sum(grad), reduce_sum(dx)) if gradient_needed(value) else None
    return dx, None, dvalue


def _pad_begin(paddings: Tensor) -> Tensor:
    """The paddings before each dimension: where the unpadded tensor starts."""
    values = static_ints(paddings)
    if values is not None:
        return int_vector(values[0::2], name="begin")
    return reshape(slice(paddings, [0, 0], [-1, 1]), [-1])


@RegisterGradient("MirrorPad")
def _mirror_pad_grad(op, grad):
    return apply_op("MirrorPadGrad", [convert_to_tensor(grad), op.inputs[1]],
                    name="MirrorPadGrad", mode=op.get_attr("mode")), None


@RegisterGradient("MirrorPadGrad")
def _mirror_pad_grad_grad(op, grad):
    return apply_op("MirrorPad", [convert_to_tensor(grad), op.inputs[1]], name="MirrorPad",
                    mode=op.get_attr("mode")), None


@constructor("Pad", "tensor", "paddings", "mode", "constant_values", single_op=False)
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
                           else dtypes.int32, name="paddings", like=x)
    if mode_name != "CONSTANT":
        return apply_op("MirrorPad", [x, paddings_t], name=name or "MirrorPad", mode=mode_name)
    if not isinstance(constant_values, Tensor) and np.ndim(constant_values) == 0 \
            and constant_values == 0:
        return apply_op("Pad", [x, paddings_t], name=name or "Pad")
    value = as_tensor(constant_values, dtype=None if isinstance(constant_values, Tensor)
                      else x.dtype, name="constant_values", like=x)
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
    check_index_dtype(axis, "ReverseV2", "axis")
    check_rank(axis, (1,), "axis of reverse")
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


@constructor("ReverseV2", "tensor", "axis", single_op=False)
def reverse(tensor, axis, name: Optional[str] = None) -> Tensor:
    """Reverses ``tensor`` along each dimension listed in ``axis``."""
    x = convert_to_tensor(tensor)
    if not isinstance(axis, Tensor) and np.ndim(axis) == 0:
        axis = [axis]
    return apply_op("ReverseV2", [x, shape_tensor(axis, name="axis")],
                    name=name or "ReverseV2")


reverse_v2 = reverse


# --------------------------------------------------------------------- slicing
def _infer_slice(inputs, attrs):
    x, begin, size_ = inputs
    for t, arg in ((begin, "begin"), (size_, "size")):
        check_index_dtype(t, "Slice", arg)
        check_rank(t, (1,), f"{arg} of slice")
    b, s = partial_ints(begin), partial_ints(size_)
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


register_foldable("Slice")


@RegisterGradient("Slice")
def _slice_grad(op, grad):
    """Pads the gradient back to the input's shape with zeros."""
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


@constructor("Slice", "input_", "begin", "size")
def slice(input_, begin, size, name: Optional[str] = None) -> Tensor:  # noqa: A001
    """The block of ``input_`` starting at ``begin`` of extent ``size`` (-1: to the end)."""
    x = convert_to_tensor(input_)
    return apply_op("Slice", [x, shape_tensor(begin, name="begin"),
                              shape_tensor(size, name="size")], name=name or "Slice")


_MASKS = ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask")


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
            result.append(None if d is None or any(v is UNKNOWN for v in bounds)
                          else len(range(d)[item]))
            position += 1
        else:
            d = dims[position]
            if item is not UNKNOWN and d is not None and not -d <= item < d:
                raise ValueError(f"slice index {item} of dimension {position} out of bounds "
                                 f"(size {d})")
            position += 1
    return tuple(result)


def _infer_strided_slice(inputs, attrs):
    x, begin, end, strides = inputs
    for t, arg in ((begin, "begin"), (end, "end"), (strides, "strides")):
        check_index_dtype(t, "StridedSlice", arg)
    dims = x.shape.as_tuple()
    b, e, s = partial_ints(begin), partial_ints(end), partial_ints(strides)
    if 0 in (s or ()):
        raise ValueError(f"strided_slice of {x.name}: strides must be non-zero, got {s}")
    if dims is None or b is None or e is None or s is None:
        return [(x.dtype, TensorShape(None))]
    if not len(b) == len(e) == len(s):
        raise ValueError(f"strided_slice of {x.name}: begin, end and strides must have one "
                         f"length, got {len(b)}, {len(e)} and {len(s)}")
    index = index_tuple(b, e, s, attrs)
    return [(x.dtype, TensorShape.from_tuple(_sliced_shape(dims, index)))]


def _strided_slice_kernel(x, begin, end, strides, **masks):
    # x's dtype kept: one element of a string (object) array is a Python str or bytes,
    # which NumPy alone would make a fixed-width '|S25' array
    return np.array(x[index_tuple(begin, end, strides, masks)], dtype=x.dtype)


define_op("StridedSlice", infer=_infer_strided_slice, kernel=_strided_slice_kernel)


register_foldable("StridedSlice")


@RegisterGradient("StridedSlice")
def _strided_slice_grad(op, grad):
    x, begin, end, strides = op.inputs
    masks = {m: op.get_attr(m) for m in _MASKS}
    dx = apply_op("StridedSliceGrad", [shape_of_input(x), begin, end, strides,
                                       convert_to_tensor(grad)], name="StridedSliceGrad", **masks)
    return dx, None, None, None


def _infer_strided_slice_grad(inputs, attrs):
    shape_t, _, _, _, dy = inputs
    return [(dy.dtype, static_shape_of(shape_t))]


def _strided_slice_grad_kernel(shape_, begin, end, strides, dy, **masks):
    out = np.zeros(tuple(shape_), dtype=dy.dtype)
    out[index_tuple(begin, end, strides, masks)] = dy
    return out


define_op("StridedSliceGrad", infer=_infer_strided_slice_grad, kernel=_strided_slice_grad_kernel)


@RegisterGradient("StridedSliceGrad")
def _strided_slice_grad_grad(op, grad):
    _, begin, end, strides, _ = op.inputs
    masks = {m: op.get_attr(m) for m in _MASKS}
    return None, None, None, None, apply_op(
        "StridedSlice", [convert_to_tensor(grad), begin, end, strides], name="StridedSlice",
        **masks)


@constructor("StridedSlice", "input_", "begin", "end", "strides")
def strided_slice(input_, begin, end, strides=None, begin_mask: int = 0, end_mask: int = 0,
                  ellipsis_mask: int = 0, new_axis_mask: int = 0, shrink_axis_mask: int = 0,
                  var=None, name: Optional[str] = None) -> Tensor:
    """``input_[begin:end:strides]`` per dimension, with TF's mask bits (see ``__getitem__``)."""
    x = convert_to_tensor(input_)
    begin_t = shape_tensor(begin, name="begin")
    end_t = shape_tensor(end, name="end")
    strides_t = ones_like(begin_t) if strides is None else shape_tensor(strides,
                                                                         name="strides")
    return apply_op("StridedSlice", [x, begin_t, end_t, strides_t],
                    name=name or "StridedSlice", begin_mask=begin_mask, end_mask=end_mask,
                    ellipsis_mask=ellipsis_mask, new_axis_mask=new_axis_mask,
                    shrink_axis_mask=shrink_axis_mask)


def _valid_index(item) -> bool:
    """Ints (anything with ``__index__``) and scalar int32/int64 tensors index tensors."""
    if isinstance(item, Tensor):
        return item.dtype in INDEX_TYPES and item.shape.ndims in (None, 0)
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


def slice_helper(tensor: Tensor, key) -> Tensor:
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
    with op_scope(None, "strided_slice", [tensor, begin, end, strides]) as scope:
        # TF1 stacks the bounds: the constants are named stack, stack_1, stack_2
        bounds = [shape_tensor(part, name="stack") for part in (begin, end, strides)]
        return strided_slice(tensor, *bounds, name=scope, **masks)


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
          infer=lambda inputs, attrs: [(inputs[0].dtype, static_shape_of(inputs[2]))],
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


@constructor("boolean_mask", "tensor", "mask", "axis", single_op=False)
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
