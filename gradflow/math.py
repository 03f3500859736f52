"""``gf.math``: the math ops under their ``tf.math`` names (twins of the top-level ones)."""
from gradflow.ops.array import unsorted_segment_sum  # noqa: F401
from gradflow.ops.segments import (  # noqa: F401
    segment_max, segment_mean, segment_min, segment_prod, segment_sum, unsorted_segment_max,
    unsorted_segment_mean, unsorted_segment_min, unsorted_segment_prod,
    unsorted_segment_sqrt_n)
from gradflow.ops.math import (  # noqa: F401
    abs, accumulate_n, acos, acosh, add, add_n, angle, argmax, argmin, asin, asinh, atan,
    atan2, atanh, ceil, conj, cos, cosh, count_nonzero, cumprod, cumsum, digamma, divide,
    equal, erf, erfc, erfinv, exp, expm1, floor, floordiv, floormod, greater, greater_equal,
    imag, is_finite, is_inf, is_nan, is_non_decreasing, is_strictly_increasing, lbeta, less,
    less_equal, lgamma, log, log1p, log_sigmoid, logical_and, logical_not, logical_or,
    logical_xor, maximum, minimum, mod, multiply, multiply_no_nan, ndtri, negative,
    not_equal, polygamma, pow, real, reciprocal, reciprocal_no_nan, reduce_all, reduce_any,
    reduce_euclidean_norm, reduce_logsumexp, reduce_max, reduce_mean, reduce_min,
    reduce_prod, reduce_std, reduce_sum, reduce_variance, rint, round, rsqrt, scalar_mul,
    sigmoid, sign, sin, sinh, softplus, softsign, sqrt, square, squared_difference,
    subtract, tan, tanh, truediv, xdivy, xlogy, zero_fraction)
from gradflow.ops.math import div_no_nan as divide_no_nan  # noqa: F401
from gradflow.ops.extra_math import xlog1py  # noqa: F401
from gradflow.ops.counting import bincount, confusion_matrix  # noqa: F401
