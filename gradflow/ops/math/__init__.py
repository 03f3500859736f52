"""Math ops: elementwise functions, comparisons, selection, reductions, scans, sorting and
matrix products.

Binary ops broadcast like NumPy; their gradients go through :func:`reduce_to_shape_of`,
the one place that sums a gradient back to the shape of a broadcast input. Rules skip
inputs that need no gradient (``gradient_needed``), so e.g. a weight multiplied by a
constant does not build a gradient for the constant.

Complex gradients follow TensorFlow's convention: for a real loss L and z = a + ib the
gradient is dL/da + i dL/db, so a holomorphic ``y = f(z)`` passes ``grad * conj(f'(z))``
back. Rules write that as ``grad * conj(...)``; ``conj`` of a real tensor adds no op.

The ops live in this package's modules
(``elementwise``, ``reductions``, ``products``),
and ``gradflow.ops.primitives``; this module re-exports their public names.
"""
from gradflow.ops.primitives import (add, cast, conj, floordiv, greater_equal, less_equal, maximum,
                                     minimum, multiply, range, reduce_sum, reduce_to_shape_of,
                                     select_v2, subtract, where_v2)
from gradflow.ops.math.elementwise import (abs, acos, acosh, angle, asin, asinh, atan, atan2, atanh,
                                           ceil, clip_by_value, complex, cos, cosh, digamma, div,
                                           div_no_nan, divide, equal, erf, erfc, exp, expm1, floor,
                                           floor_div, floormod, greater, imag, is_finite, is_inf,
                                           is_nan, less, lgamma, log, log1p, log_sigmoid,
                                           logical_and, logical_not, logical_or, logical_xor, mod,
                                           negative, not_equal, polygamma, pow, real, realdiv,
                                           reciprocal, rint, round, rsqrt, scalar_mul, select,
                                           sigmoid, sign, sin, sinh, sqrt, square,
                                           squared_difference, tan, tanh, to_double, to_float,
                                           to_int32, to_int64, truediv, truncatediv, truncatemod,
                                           where)
from gradflow.ops.math.products import accumulate_n, add_n, matmul
from gradflow.ops.math.reductions import (arg_max, arg_min, argmax, argmin, argsort,
                                          count_nonzero, cumprod, cumsum,
                                          is_non_decreasing, is_strictly_increasing, lbeta,
                                          reduce_all, reduce_any, reduce_logsumexp, reduce_max,
                                          reduce_mean, reduce_min, reduce_prod, sort)

# The family's other public names, which other modules use (not in ``__all__``).
from gradflow.ops.math.elementwise import (erfinv as erfinv, multiply_no_nan as multiply_no_nan,
                                           ndtri as ndtri, reciprocal_no_nan as reciprocal_no_nan,
                                           softplus as softplus, softsign as softsign,
                                           xdivy as xdivy, xlogy as xlogy)
from gradflow.ops.math.reductions import (reduce_euclidean_norm as reduce_euclidean_norm,
                                          reduce_std as reduce_std,
                                          reduce_variance as reduce_variance,
                                          zero_fraction as zero_fraction)


__all__ = [
    "cast", "to_float", "to_double", "to_int32", "to_int64", "negative", "square", "sqrt", "rsqrt",
    "reciprocal", "exp", "expm1", "log", "log1p", "sin", "cos", "tan", "asin", "acos", "atan",
    "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "sigmoid", "log_sigmoid", "erf", "erfc",
    "lgamma", "lbeta", "digamma", "floor", "ceil", "round", "rint", "abs", "sign", "is_nan",
    "is_inf", "is_finite", "logical_not", "real", "imag", "conj", "angle", "complex", "add",
    "subtract", "multiply", "divide", "truediv", "realdiv", "div", "div_no_nan", "floordiv",
    "floor_div", "floormod", "mod", "truncatediv", "truncatemod", "pow", "maximum", "minimum",
    "squared_difference", "atan2", "polygamma", "clip_by_value", "scalar_mul", "less",
    "less_equal", "greater", "greater_equal", "equal", "not_equal", "logical_and", "logical_or",
    "logical_xor", "where", "where_v2", "select", "select_v2", "reduce_sum", "reduce_mean",
    "reduce_prod", "reduce_max", "reduce_min", "reduce_any", "reduce_all", "reduce_logsumexp",
    "count_nonzero", "is_non_decreasing", "is_strictly_increasing", "argmax", "argmin",
    "arg_max", "arg_min", "cumsum",
    "cumprod", "sort", "argsort", "range", "add_n", "accumulate_n", "matmul", "reduce_to_shape_of",
]
