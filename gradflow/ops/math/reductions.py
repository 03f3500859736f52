"""Reductions (reduce_*), argmax/argmin, scans (cumsum, cumprod) and sorting."""
from __future__ import annotations

import builtins
from typing import Callable, Optional

import numpy as np

from gradflow.framework import dtypes
from gradflow.framework.constant import constant, convert_to_tensor
from gradflow.framework.graph import Tensor, name_scope
from gradflow.framework.registry import NotDifferentiable, RegisterGradient, define_op
from gradflow.framework.tensor_shape import TensorShape
from gradflow.ops.array.shapes import invert_permutation, size, transpose
from gradflow.ops.array.sources import ones_like, stop_gradient
from gradflow.ops.common import (FLOATING, NUMERIC, REAL_NUMERIC, apply_op, as_tensor,
                                 check_dtype_in, constructor, static_axes, static_ints)
from gradflow.ops.math.elementwise import (div_no_nan, equal, exp, is_finite, less, lgamma, log,
                                           logical_and, not_equal, real, real_grad, sqrt, square,
                                           truediv)
from gradflow.ops.primitives import (INDEX, accumulator, add, broadcast_reduction_grad, cast, conj,
                                     keep_reduced_dims, less_equal, reduce_sum, reduction,
                                     reduction_args, reshape, shape, shape_of_input, where_v2,
                                     zeros_like)


def _prod(x, axes, keepdims):
    return np.prod(x, axis=axes, keepdims=keepdims, dtype=accumulator(x.dtype))


def _mean(x, axes, keepdims):
    count = int(np.prod([x.shape[a] for a in axes]))
    if x.dtype.kind not in "iu":
        return np.sum(x, axis=axes, keepdims=keepdims, dtype=accumulator(x.dtype)) / count
    total = np.sum(x, axis=axes, keepdims=keepdims,
                   dtype=np.int64 if x.dtype.kind == "i" else np.uint64)
    quotient = np.abs(total) // builtins.max(count, 1)  # truncating toward zero, as TF does
    return np.where(total < 0, -quotient, quotient)


def _bound(dtype: np.dtype, upper: bool):
    """The identity of max (``upper`` False) or min: what an empty reduction returns."""
    if dtype.kind == "f":
        return np.inf if upper else -np.inf
    info = np.iinfo(dtype)
    return info.max if upper else info.min


def _max(x, axes, keepdims):
    return np.max(x, axis=axes, keepdims=keepdims, initial=_bound(x.dtype, upper=False))


def _min(x, axes, keepdims):
    return np.min(x, axis=axes, keepdims=keepdims, initial=_bound(x.dtype, upper=True))


def _euclidean_norm(x, axes, keepdims):
    magnitude = np.abs(x) if x.dtype.kind in "fc" else np.abs(x.astype(np.float64))
    # hypot rescales as it goes: no overflow for huge entries, no underflow for tiny ones
    return np.hypot.reduce(magnitude, axis=axes, keepdims=keepdims)


def _mean_grad(op, grad):
    x, y = op.inputs[0], op.outputs[0]
    spread = broadcast_reduction_grad(op, grad)
    in_count, out_count = x.shape.num_elements(), y.shape.num_elements()
    if in_count is not None and out_count is not None:
        return spread * (out_count / builtins.max(in_count, 1)), None
    ratio = truediv(cast(size(y), dtypes.float64), cast(size(x), dtypes.float64))
    return spread * cast(ratio, spread.dtype), None


def _prod_layout_kernel(input_shape, axes):
    ndims = len(input_shape)
    reduced = np.unique(np.asarray(axes, dtype=np.int64).reshape(-1) % builtins.max(ndims, 1))
    others = np.setdiff1d(np.arange(ndims), reduced)
    sizes = [np.prod(input_shape[reduced]), np.prod(input_shape[others])]
    return (np.concatenate([reduced, others]).astype(np.int32),
            np.asarray(sizes, dtype=np.int32))


define_op("ProdLayout", kernel=_prod_layout_kernel,
          infer=lambda inputs, attrs: [(dtypes.int32, inputs[0].shape),
                                       (dtypes.int32, TensorShape([2]))])


NotDifferentiable("ProdLayout")


def _prod_layout(x: Tensor, axis: Tensor) -> tuple:
    """The permutation moving the reduced axes of ``x`` to the front, and the matrix shape
    [reduced count, other count] of ``x`` so permuted (constants when static)."""
    dims = x.shape.as_tuple()
    axes = static_axes(axis, None if dims is None else len(dims))
    if axes is None or not x.shape.is_fully_defined():
        return apply_op("ProdLayout", [shape(x), axis], name="ProdLayout")
    others = [i for i in builtins.range(len(dims)) if i not in axes]
    sizes = [int(np.prod([dims[i] for i in group])) for group in (axes, others)]
    return (constant(np.asarray(axes + others, np.int32), name="perm"),
            constant(np.asarray(sizes, np.int32), name="matrix_shape"))


def _prod_grad(op, grad):
    """d prod / d x_i is the product of the other entries reduced with x_i: the product of
    those before it times those after it (exclusive cumprods), so zeros need no care."""
    x, axis = op.inputs
    perm, matrix_shape = _prod_layout(x, axis)
    permuted = transpose(x, perm)
    matrix = reshape(permuted, matrix_shape)
    others = cumprod(matrix, 0, exclusive=True) * cumprod(matrix, 0, exclusive=True,
                                                           reverse=True)
    others = transpose(reshape(others, shape_of_input(permuted)),
                             invert_permutation(perm))
    return broadcast_reduction_grad(op, grad) * conj(others), None


def _extremum_grad(op, grad):
    """Max/Min: the gradient goes to the entries equal to the result, split among ties."""
    x, axis = op.inputs
    hits = cast(equal(x, keep_reduced_dims(op, op.outputs[0])), grad.dtype)
    return hits / reduce_sum(hits, axis, keepdims=True) * keep_reduced_dims(op, grad), None


def _euclidean_norm_grad(op, grad):
    """x / ||x|| per entry (nan where the norm is zero, as in TensorFlow)."""
    norm = keep_reduced_dims(op, op.outputs[0])
    return op.inputs[0] * (keep_reduced_dims(op, real_grad(grad)) / norm), None


reduce_mean = reduction("Mean", _mean, NUMERIC, _mean_grad)


reduce_prod = reduction("Prod", _prod, NUMERIC, _prod_grad)


reduce_max = reduction("Max", _max, REAL_NUMERIC, _extremum_grad)


reduce_min = reduction("Min", _min, REAL_NUMERIC, _extremum_grad)


reduce_any = reduction("Any", lambda x, axes, keep: np.any(x, axes, keepdims=keep),
                        (dtypes.bool,), None)


reduce_all = reduction("All", lambda x, axes, keep: np.all(x, axes, keepdims=keep),
                        (dtypes.bool,), None)


_euclidean_norm_op = reduction("EuclideanNorm", _euclidean_norm, NUMERIC,
                                _euclidean_norm_grad)


@constructor("EuclideanNorm", "input_tensor", "axis", "keepdims", single_op=False)
def reduce_euclidean_norm(input_tensor, axis=None, keepdims: bool = False,
                          name: Optional[str] = None) -> Tensor:
    """``sqrt(sum(|x|^2))`` over ``axis``, without overflow for large entries."""
    return _euclidean_norm_op(input_tensor, axis, keepdims, name)


@constructor("ReduceLogSumExp", "input_tensor", "axis", "keepdims", "reduction_indices",
             "keep_dims", single_op=False)
def reduce_logsumexp(input_tensor, axis=None, keepdims=None, name: Optional[str] = None,
                     reduction_indices=None, keep_dims=None) -> Tensor:
    """``log(sum(exp(x)))`` over ``axis``, shifted by the maximum so nothing overflows."""
    axis, keep = reduction_args(axis, reduction_indices, keepdims, keep_dims)
    x = convert_to_tensor(input_tensor, name="input_tensor")
    check_dtype_in(x, FLOATING, "ReduceLogSumExp", "input_tensor")
    with name_scope(name, "ReduceLogSumExp", [x]) as scope:
        peak = reduce_max(x, axis, keepdims=True)
        # The shift only keeps exp in range, so it carries no gradient; an infinite peak
        # would turn x - peak into nan, and is replaced by 0.
        shift = stop_gradient(where_v2(is_finite(peak), peak, zeros_like(peak)))
        total = log(reduce_sum(exp(x - shift), axis, keepdims=keep))
        if not keep:
            shift = reshape(shift, shape_of_input(total))
        return add(total, shift, name=scope)


@constructor("count_nonzero", "input_tensor", "axis", "keepdims", "dtype", "reduction_indices",
             "keep_dims", "input", single_op=False)
def count_nonzero(input_tensor=None, axis=None, keepdims=None, dtype=dtypes.int64,
                  name: Optional[str] = None, reduction_indices=None, keep_dims=None,
                  input=None) -> Tensor:  # noqa: A002 - TF1's alias
    """The number of non-zero (true) entries of ``input_tensor`` over ``axis``."""
    if input_tensor is None and input is None:
        raise ValueError("count_nonzero needs input_tensor (or its alias input)")
    axis, keep = reduction_args(axis, reduction_indices, keepdims, keep_dims)
    x = convert_to_tensor(input_tensor if input_tensor is not None else input,
                          name="input_tensor")
    with name_scope(name, "count_nonzero", [x]):
        nonzero = cast(not_equal(x, False if x.dtype.is_bool else 0), dtypes.int64)
        return cast(reduce_sum(nonzero, axis, keepdims=keep), dtype)


def _centered_squares(x: Tensor, axis) -> Tensor:
    """|x - mean(x)|^2 over ``axis``: the terms of the variance, real even for complex x."""
    if not (x.dtype.is_floating or x.dtype.is_complex):
        raise TypeError(f"Input must be either real or complex. Received integer type "
                        f"{x.dtype.name} ({x.name}).")
    deviation = x - reduce_mean(x, axis, keepdims=True)
    return real(deviation * conj(deviation)) if x.dtype.is_complex else square(deviation)


@constructor("reduce_variance", "input_tensor", "axis", "keepdims", single_op=False)
def reduce_variance(input_tensor, axis=None, keepdims: bool = False,
                    name: Optional[str] = None) -> Tensor:
    """The (population) variance of ``input_tensor`` over ``axis``."""
    x = convert_to_tensor(input_tensor, name="input_tensor")
    with name_scope(name or "reduce_variance"):
        return reduce_mean(_centered_squares(x, axis), axis, keepdims=keepdims)


@constructor("reduce_std", "input_tensor", "axis", "keepdims", single_op=False)
def reduce_std(input_tensor, axis=None, keepdims: bool = False,
               name: Optional[str] = None) -> Tensor:
    """The (population) standard deviation of ``input_tensor`` over ``axis``."""
    x = convert_to_tensor(input_tensor, name="input_tensor")
    with name_scope(name or "reduce_std"):
        return sqrt(reduce_mean(_centered_squares(x, axis), axis, keepdims=keepdims))


@constructor("lbeta", "x", single_op=False)
def lbeta(x, name: Optional[str] = None) -> Tensor:
    """log |B(x)| of the multivariate beta function over the last axis:
    sum(lgamma(x)) - lgamma(sum(x)); an empty last axis gives -inf."""
    x = convert_to_tensor(x, name="x")
    with name_scope(name, "lbeta", [x]):
        return reduce_sum(lgamma(x), -1) - lgamma(reduce_sum(x, -1))


@constructor("zero_fraction", "value", single_op=False)
def zero_fraction(value, name: Optional[str] = None) -> Tensor:
    """The fraction of entries of ``value`` that are zero, as a float32 scalar."""
    x = convert_to_tensor(value, name="value")
    with name_scope(name, "zero_fraction", [x]):
        return reduce_mean(cast(equal(x, 0), dtypes.float32))


def _is_monotonic(x, in_order: Callable, name: Optional[str], default_name: str) -> Tensor:
    x = convert_to_tensor(x, name="x")
    if not x.dtype.is_numeric:
        raise TypeError(f"Expected x to be numeric, got {x.dtype.name} ({x.name})")
    with name_scope(name, default_name, [x]):
        flat = reshape(x, [-1])
        return reduce_all(in_order(flat[:-1], flat[1:]))


@constructor("is_non_decreasing", "x", single_op=False)
def is_non_decreasing(x, name: Optional[str] = None) -> Tensor:
    """Whether the entries of ``x``, in row-major order, never decrease."""
    return _is_monotonic(x, less_equal, name, "is_non_decreasing")


@constructor("is_strictly_increasing", "x", single_op=False)
def is_strictly_increasing(x, name: Optional[str] = None) -> Tensor:
    """Whether the entries of ``x``, in row-major order, always increase."""
    return _is_monotonic(x, less, name, "is_strictly_increasing")


# ----------------------------------------------------------------- argmax, argmin
_ARG_OUTPUT_TYPES = (dtypes.int16, dtypes.uint16, dtypes.int32, dtypes.int64)


def _infer_arg_reduction(inputs, attrs):
    x, dimension = inputs
    out = attrs["output_type"]
    if dimension.shape.ndims not in (None, 0):
        raise ValueError(f"The dimension of argmax/argmin must be a scalar, got "
                         f"{dimension.name} of shape {dimension.shape}")
    ndims = x.shape.ndims
    axis = static_ints(dimension)
    if ndims is None:
        return [(out, TensorShape(None))]
    if axis is None:
        return [(out, TensorShape([None] * builtins.max(ndims - 1, 0)))]
    a = axis[0]
    if not -ndims <= a < ndims:
        raise ValueError(f"Dimension ({a}) must be in the range [{-ndims}, {ndims}), where "
                         f"{ndims} is the number of dimensions in the input {x.name} of shape "
                         f"{x.shape}")
    dims = x.shape.as_tuple()
    return [(out, TensorShape.from_tuple(dims[:a % ndims] + dims[a % ndims + 1:]))]


def _arg_kernel(find: Callable) -> Callable:
    def kernel(x, dimension, *, output_type):
        a = int(dimension)
        if x.shape[a] == 0:
            raise ValueError(f"Reduction axis {a} is empty in shape {list(x.shape)}")
        return np.asarray(find(x, axis=a)).astype(output_type.as_numpy_dtype)
    return kernel


def _arg_reduction(op_type: str, find: Callable) -> Callable:
    """Defines ArgMax/ArgMin (index of the first extreme entry) and its TF1 constructor."""
    define_op(op_type, infer=_infer_arg_reduction, kernel=_arg_kernel(find))
    NotDifferentiable(op_type)

    @constructor(op_type, "input", "axis")
    def build(input, axis=None, name: Optional[str] = None, dimension=None,  # noqa: A002
              output_type=dtypes.int64) -> Tensor:
        if axis is not None and dimension is not None:
            raise ValueError("Cannot specify both 'dimension' and 'axis'.")
        axis = 0 if axis is None and dimension is None else \
            (dimension if axis is None else axis)
        x = convert_to_tensor(input, name="input")
        check_dtype_in(x, REAL_NUMERIC + (dtypes.bool,), op_type, "input")
        out = dtypes.as_dtype(output_type)
        if out not in _ARG_OUTPUT_TYPES:
            names = ", ".join(d.name for d in _ARG_OUTPUT_TYPES)
            raise TypeError(f"Value passed to parameter 'output_type' has DataType {out.name} "
                            f"not in list of allowed values: {names}")
        dim = as_tensor(axis, dtype=None if isinstance(axis, Tensor) else dtypes.int32,
                        name="dimension", like=x)
        check_dtype_in(dim, INDEX, op_type, "dimension")
        return apply_op(op_type, [x, dim], name=name or op_type, output_type=out)

    build.__name__ = op_type.lower()
    build.__doc__ = (f"Index of the {op_type[3:].lower()}imum of ``input`` along ``axis`` "
                     "(default 0); the first one among ties.")
    return build


argmax = _arg_reduction("ArgMax", np.argmax)


argmin = _arg_reduction("ArgMin", np.argmin)


@constructor("ArgMax", "input", "dimension", single_op=False)
def arg_max(input, dimension, output_type=dtypes.int64, name: Optional[str] = None) -> Tensor:
    """TF1's older spelling of ``argmax``: ``dimension`` is required and comes second."""
    return argmax(input, dimension, name=name, output_type=output_type)


@constructor("ArgMin", "input", "dimension", single_op=False)
def arg_min(input, dimension, output_type=dtypes.int64, name: Optional[str] = None) -> Tensor:
    """TF1's older spelling of ``argmin``: ``dimension`` is required and comes second."""
    return argmin(input, dimension, name=name, output_type=output_type)


# -------------------------------------------------------------------------- scans
def _infer_scan(inputs, attrs):
    x, axis = inputs
    ndims = x.shape.ndims
    if ndims == 0:
        raise ValueError(f"cumsum/cumprod needs a tensor of rank >= 1, got the scalar {x.name}")
    if axis.shape.ndims not in (None, 0):
        raise ValueError(f"The axis of cumsum/cumprod must be a scalar, got {axis.name} of "
                         f"shape {axis.shape}")
    a = static_ints(axis)
    if a is not None and ndims is not None and not -ndims <= a[0] < ndims:
        raise ValueError(f"Expected scan axis in the range [{-ndims}, {ndims}), but got {a[0]} "
                         f"(input {x.name} of shape {x.shape})")
    return [(x.dtype, x.shape)]


def _scan_kernel(ufunc: np.ufunc) -> Callable:
    """Cumulative ``ufunc`` along an axis; ``exclusive`` leaves each entry out of its own
    result, ``reverse`` runs from the end."""
    def kernel(x, axis, *, exclusive, reverse):
        a = int(axis)
        values = np.flip(x, a) if reverse else x
        with np.errstate(all="ignore"):
            out = ufunc.accumulate(values, axis=a, dtype=x.dtype)
        if exclusive and out.shape[a]:
            first = np.full_like(np.take(out, [0], axis=a), ufunc.identity)
            out = np.concatenate([first, np.delete(out, -1, axis=a)], axis=a)
        return np.flip(out, a) if reverse else out
    return kernel


def _scan(op_type: str, ufunc: np.ufunc, gradient: Callable) -> Callable:
    """Defines Cumsum/Cumprod and returns its TF1 constructor."""
    define_op(op_type, infer=_infer_scan, kernel=_scan_kernel(ufunc))
    RegisterGradient(op_type)(gradient)

    @constructor(op_type, "x", "axis")
    def build(x, axis=0, exclusive: bool = False, reverse: bool = False,
              name: Optional[str] = None) -> Tensor:
        x = convert_to_tensor(x, name="x")
        check_dtype_in(x, NUMERIC, op_type)
        axis_t = as_tensor(axis, dtype=None if isinstance(axis, Tensor) else dtypes.int32,
                           name="axis", like=x)
        check_dtype_in(axis_t, INDEX, op_type, "axis")
        return apply_op(op_type, [x, axis_t], name=name or op_type,
                        exclusive=builtins.bool(exclusive), reverse=builtins.bool(reverse))

    build.__name__ = op_type.lower()
    build.__doc__ = (f"Cumulative {'sum' if op_type == 'Cumsum' else 'product'} of "
                     "``x`` along ``axis``.")
    return build


def _cumsum_grad(op, grad):
    """Each entry reaches the outputs after it: sum the gradients the other way round."""
    return cumsum(grad, op.inputs[1], exclusive=op.get_attr("exclusive"),
                  reverse=not op.get_attr("reverse")), None


def _cumprod_grad(op, grad):
    """x_i reaches the outputs y_k that include it, with dy_k/dx_i the product of y_k's
    other factors. Where x_i != 0 that is y_k / x_i. At the first zero in scan order it
    is a cumprod with that zero replaced by 1. After it, every such product holds that
    zero. (TensorFlow divides everywhere, giving zeros a zero gradient.) Second derivatives
    are exact too, except at zeros that follow another zero in the scan."""
    x, axis = op.inputs
    exclusive, reverse = op.get_attr("exclusive"), op.get_attr("reverse")

    def sum_over_reached_outputs(t):
        return cumsum(t, axis, exclusive=exclusive, reverse=not reverse)

    is_zero = equal(x, 0)
    zeros_before = cumsum(cast(is_zero, dtypes.int32), axis, exclusive=True, reverse=reverse)
    first_zero = logical_and(is_zero, equal(zeros_before, 0))
    skipping_it = cumprod(where_v2(first_zero, ones_like(x), x), axis,
                          exclusive=exclusive, reverse=reverse)
    at_first_zero = sum_over_reached_outputs(grad * conj(skipping_it))
    elsewhere = div_no_nan(sum_over_reached_outputs(grad * conj(op.outputs[0])), conj(x))
    return where_v2(first_zero, at_first_zero, elsewhere), None


cumsum = _scan("Cumsum", np.add, _cumsum_grad)


cumprod = _scan("Cumprod", np.multiply, _cumprod_grad)


# ------------------------------------------------------------------------ sorting
def _infer_argsort(inputs, attrs):
    x = inputs[0]
    ndims = x.shape.ndims
    a = attrs["axis"]
    if ndims == 0:
        raise ValueError(f"sort/argsort needs a tensor of rank >= 1, got the scalar {x.name}")
    if ndims is not None and not -ndims <= a < ndims:
        raise ValueError(f"sort/argsort axis {a} is out of range for {x.name} of shape "
                         f"{x.shape}")
    return [(dtypes.int32, x.shape)]


def _argsort_kernel(x, *, axis, descending):
    """A stable sort: ties keep their order, in either direction (as TensorFlow's)."""
    if not descending:
        return np.argsort(x, axis=axis, kind="stable").astype(np.int32)
    # Stable descending order: sort the reversed values ascending, then reverse back.
    last = x.shape[axis] - 1
    order = np.argsort(np.flip(x, axis), axis=axis, kind="stable")
    return (last - np.flip(order, axis)).astype(np.int32)


define_op("ArgSort", infer=_infer_argsort, kernel=_argsort_kernel)


NotDifferentiable("ArgSort")


def _infer_permute(inputs, attrs):
    x, permutation = inputs
    return [(x.dtype, x.shape.merge_with(permutation.shape))]


# PermuteAlongAxis(x, p)[..., i, ...] = x[..., p[..., i, ...], ...] along ``axis``, where
# p holds permutations (an ArgSort result): then the inverse permutation undoes it.
define_op("PermuteAlongAxis", infer=_infer_permute,
          kernel=lambda x, permutation, *, axis: np.take_along_axis(x, permutation, axis))


@RegisterGradient("PermuteAlongAxis")
def _permute_grad(op, grad):
    permutation = op.inputs[1]
    axis = op.get_attr("axis")
    inverse = apply_op("ArgSort", [permutation], name="ArgSort", axis=axis, descending=False)
    return apply_op("PermuteAlongAxis", [grad, inverse], name="PermuteAlongAxis",
                    axis=axis), None


def _sort_args(values, axis, direction: str, op_name: str) -> tuple:
    """Validates sort/argsort arguments: a constant axis and a known direction."""
    if direction not in ("ASCENDING", "DESCENDING"):
        raise ValueError(f"Argument `direction` should be one of ASCENDING, DESCENDING. "
                         f"Received: direction={direction}")
    static = static_ints(axis) if isinstance(axis, Tensor) else \
        [int(a) for a in np.asarray(axis).reshape(-1)]
    if static is None or len(static) != 1:
        raise ValueError(f"Argument `axis` must be a constant scalar. Received: axis={axis!r}.")
    x = convert_to_tensor(values, name="values")
    check_dtype_in(x, REAL_NUMERIC, op_name, "values")
    return x, static[0]


@constructor("argsort", "values", "axis", "direction", "stable", single_op=False)
def argsort(values, axis=-1, direction: str = "ASCENDING", stable: bool = False,
            name: Optional[str] = None) -> Tensor:
    """The int32 indices that sort ``values`` along ``axis`` (ties keep their order)."""
    x, axis = _sort_args(values, axis, direction, "argsort")
    with name_scope(name, "argsort", [x]) as scope:
        return apply_op("ArgSort", [x], name=scope, axis=axis,
                        descending=direction == "DESCENDING")


@constructor("sort", "values", "axis", "direction", single_op=False)
def sort(values, axis=-1, direction: str = "ASCENDING", name: Optional[str] = None) -> Tensor:
    """``values`` sorted along ``axis``; the gradient is routed back through the permutation."""
    x, axis = _sort_args(values, axis, direction, "sort")
    with name_scope(name, "sort", [x]) as scope:
        order = apply_op("ArgSort", [x], name="ArgSort", axis=axis,
                         descending=direction == "DESCENDING")
        return apply_op("PermuteAlongAxis", [x, order], name=scope, axis=axis)
