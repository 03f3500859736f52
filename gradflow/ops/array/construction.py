"""Constructed tensors: grids and ranges (linspace, meshgrid) and diagonals (diag,
matrix_diag, matrix_band_part, eye).
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from gradflow.framework import dtypes
from gradflow.framework.constant import constant, convert_to_tensor
from gradflow.framework.graph import Tensor, get_default_graph
from gradflow.framework.registry import RegisterGradient, define_op, gradient_needed
from gradflow.framework.tensor_shape import TensorShape
from gradflow.ops.array.indexing import concat
from gradflow.ops.array.shapes import size
from gradflow.ops.array.slicing import slice_helper
from gradflow.ops.array.sources import ones
from gradflow.ops.common import (FLOATING, apply_op, as_tensor, broadcast_shape, check_dtype_in,
                                 constructor, graph_for, static_ints)
from gradflow.ops.primitives import (broadcast_to, cast, check_index_dtype, check_rank, minimum,
                                     multiply, normalized_axis, reduce_sum, reduce_to_shape_of,
                                     reshape, shape_tensor, subtract, zeros_like)


# -------------------------------------------------------------- grids and ranges
def _infer_linspace(inputs, attrs):
    start, stop, num = inputs
    check_dtype_in(start, FLOATING, "LinSpace", "start")
    if stop.dtype is not start.dtype:
        raise TypeError(f"start and stop of linspace must have one dtype, got "
                        f"{start.dtype.name} ({start.name}) and {stop.dtype.name} ({stop.name})")
    check_index_dtype(num, "LinSpace", "num")
    if num.shape.ndims not in (None, 0):
        raise ValueError(f"num of linspace must be a scalar, got shape {num.shape}")
    count = (static_ints(num) or [None])[0]
    if count is not None and count < 0:
        raise ValueError(f"num of linspace must be non-negative, got {count}")
    dims = broadcast_shape(start.shape, stop.shape, f"linspace({start.name}, {stop.name})")
    if dims.ndims is None:
        return [(start.dtype, TensorShape(None))]
    a = normalized_axis(attrs["axis"], dims.ndims + 1, "linspace")
    return [(start.dtype, dims[:a].concatenate([count]).concatenate(dims[a:]))]


def _linspace_kernel(start, stop, num, *, axis):
    if num < 0:
        raise ValueError(f"num must be non-negative, got {num}")
    return np.linspace(start, stop, int(num), axis=axis).astype(start.dtype, copy=False)


define_op("LinSpace", infer=_infer_linspace, kernel=_linspace_kernel)


@RegisterGradient("LinSpace")
def _linspace_grad(op, grad):
    """Element i is start + (stop - start) * t_i with t_i = i / (num - 1) (t_0 = 0)."""
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


@constructor("LinSpace", "start", "stop", "num", "axis", single_op=False)
def linspace(start, stop, num, name: Optional[str] = None, axis: int = 0) -> Tensor:
    """``num`` evenly spaced values from ``start`` to ``stop`` (both included).

    ``start`` and ``stop`` may be tensors broadcasting together; the values then run
    along ``axis``. Integer bounds give float64 values.
    """
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


@constructor("Diag", "diagonal", single_op=False)
def diag(diagonal, name: Optional[str] = None) -> Tensor:
    """The tensor of rank 2k with ``diagonal`` (rank k) on its diagonal, zeros elsewhere."""
    return apply_op("Diag", [convert_to_tensor(diagonal)], name=name or "Diag")


@constructor("DiagPart", "input", single_op=False)
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
    check_rank(k, (0, 1), f"k of {op_type}")
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
        check_rank(t, (0,), f"{arg} of matrix_diag")
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


@constructor("diag", "diagonal", "k", "num_rows", "num_cols", "padding_value", "align",
             single_op=False)
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


@constructor("diag_part", "input", "k", "padding_value", "align", single_op=False)
def matrix_diag_part(input, name: str = "diag_part", k=0, padding_value=0,  # noqa: A002
                     align: str = "RIGHT_LEFT") -> Tensor:
    """The diagonals ``k`` of batched matrices, packed as ``matrix_diag`` takes them."""
    x = convert_to_tensor(input)
    k_t, align = _matrix_diag_args(x, k, align)
    return apply_op("MatrixDiagPartV3", [x, k_t, _scalar_like(padding_value, x.dtype, x)],
                    name=name, align=align)


@constructor("set_diag", "input", "diagonal", "k", "align", single_op=False)
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
        check_index_dtype(t, "MatrixBandPart", arg)
        check_rank(t, (0,), f"{arg} of matrix_band_part")
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


@constructor("MatrixBandPart", "input", "num_lower", "num_upper", single_op=False)
def matrix_band_part(input, num_lower, num_upper, name: Optional[str] = None) -> Tensor:  # noqa: A002
    """Keeps ``num_lower`` subdiagonals and ``num_upper`` superdiagonals (negative: all)."""
    x = convert_to_tensor(input)
    return apply_op("MatrixBandPart", [x, _scalar_like(num_lower, dtypes.int64, x),
                                       _scalar_like(num_upper, dtypes.int64, x)],
                    name=name or "MatrixBandPart")


@constructor("eye", "num_rows", "num_columns", "batch_shape", "dtype", single_op=False)
def eye(num_rows, num_columns=None, batch_shape=None, dtype=dtypes.float32,
        name: Optional[str] = None) -> Tensor:
    """Identity matrices (``num_rows`` x ``num_columns``), optionally batched."""
    with get_default_graph().name_scope(name or "eye") as scope:
        num_columns = num_rows if num_columns is None else num_columns
        if isinstance(num_rows, Tensor) or isinstance(num_columns, Tensor):
            diag_size = minimum(_scalar_like(num_rows, dtypes.int32, None),
                                _scalar_like(num_columns, dtypes.int32, None))
        else:
            diag_size = min(int(num_rows), int(num_columns))
        batch = shape_tensor([] if batch_shape is None else batch_shape, name="batch_shape")
        diag_shape = concat([batch, shape_tensor([diag_size], name="diag_size")], 0)
        return matrix_diag(ones(diag_shape, dtype=dtype), num_rows=num_rows,
                           num_cols=num_columns, name=scope)


def _getitem(self, key):
    """``tensor[key]``: several ops (the slice spec and the slice), added atomically."""
    with graph_for([self]).atomic():
        return slice_helper(self, key)


Tensor.__getitem__ = _getitem
