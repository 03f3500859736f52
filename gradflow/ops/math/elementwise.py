"""Elementwise math: unary functions, complex numbers, binary ops and their broadcasting
gradients, comparisons and selection.
"""
from __future__ import annotations

from typing import Callable, Optional

import numpy as np
from scipy import special

from gradflow.framework import dtypes
from gradflow.framework.constant import convert_to_tensor
from gradflow.framework.graph import Tensor, name_scope
from gradflow.framework.indexed_slices import IndexedSlices
from gradflow.framework.registry import (NotDifferentiable, RegisterGradient, define_op,
                                         gradient_needed)
from gradflow.ops.array.sources import ones_like
from gradflow.ops.common import (FLOATING, NUMERIC, REAL_NUMERIC, TRAINABLE, apply_op, as_tensor,
                                 binary_operands, broadcast_shape, check_dtype_in, constructor,
                                 graph_for)
from gradflow.ops.primitives import (COMPLEX, binary, binary_grads, branches, cast,
                                     check_both_or_neither, conj, elementwise_kernel, floordiv,
                                     integer_division, maximum, minimum, multiply,
                                     reduce_to_shape_of, to_bool, true_coordinates, unary, where_v2,
                                     zeros_like)


_SIGNED_INTEGERS = (dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64)


_REAL_SIGNED = FLOATING + _SIGNED_INTEGERS


_SIGNED = _REAL_SIGNED + COMPLEX


_ALL_TYPES = NUMERIC + (dtypes.bool, dtypes.string)


def _real_part(dtype: dtypes.DType) -> dtypes.DType:
    return dtype.real_dtype


@constructor("ToFloat", "x", single_op=False)
def to_float(x, name: str = "ToFloat") -> Tensor:
    return cast(x, dtypes.float32, name=name)


@constructor("ToDouble", "x", single_op=False)
def to_double(x, name: str = "ToDouble") -> Tensor:
    return cast(x, dtypes.float64, name=name)


@constructor("ToInt32", "x", single_op=False)
def to_int32(x, name: str = "ToInt32") -> Tensor:
    return cast(x, dtypes.int32, name=name)


@constructor("ToInt64", "x", single_op=False)
def to_int64(x, name: str = "ToInt64") -> Tensor:
    return cast(x, dtypes.int64, name=name)


# Above this, exp(-x) overflows float32 (the logistic of x is denormal): expit answers.
_SIGMOID_FLOAT32_CEILING = 88.0


def _sigmoid_kernel(x):
    if x.dtype.kind == "c":
        return 1 / (1 + np.exp(-x))
    if x.dtype == np.float32 and x.ndim and x.size:
        # 1 / (1 + exp(-x)) in NumPy's vectorised float32 ufuncs, in one buffer: within
        # 3 ulp of the exact logistic (expit: 2), 2.5x faster than expit's scalar loop
        e = np.negative(x)  # contiguous, so its max is one fast pass
        if e.max() <= _SIGMOID_FLOAT32_CEILING:
            np.exp(e, out=e)
            np.add(e, 1, out=e)
            return np.reciprocal(e, out=e)
    # SciPy's logistic ufunc: no overflow at either extreme, full relative accuracy in
    # the far negative tail, and one pass over memory (the step of every LSTM gate).
    return special.expit(x).astype(x.dtype, copy=False)


def _digamma_kernel(x):
    poles = (x <= 0) & (x == np.floor(x))  # nan at the poles, as TensorFlow gives
    return np.where(poles, np.nan, special.psi(x))


_TWO_OVER_SQRT_PI = 2 / np.sqrt(np.pi)


_SQRT_PI_OVER_TWO = np.sqrt(np.pi) / 2


_SQRT_TWO_PI = np.sqrt(2 * np.pi)


# op type, NumPy kernel, accepted dtypes, and f'(x) built from (x, y = f(x)).
negative = unary("Neg", np.negative, _SIGNED, gradient=lambda op, grad: negative(grad))


square = unary("Square", np.square, NUMERIC, lambda x, y: 2 * x)


sqrt = unary("Sqrt", np.sqrt, TRAINABLE, lambda x, y: 0.5 / y)


rsqrt = unary("Rsqrt", lambda x: 1 / np.sqrt(x), TRAINABLE,
               lambda x, y: -0.5 * y * square(y))


reciprocal = unary("Reciprocal", np.reciprocal, TRAINABLE, lambda x, y: -square(y))


exp = unary("Exp", np.exp, TRAINABLE, lambda x, y: y)


expm1 = unary("Expm1", np.expm1, TRAINABLE, lambda x, y: exp(x))


log = unary("Log", np.log, TRAINABLE, lambda x, y: reciprocal(x))


log1p = unary("Log1p", np.log1p, TRAINABLE, lambda x, y: reciprocal(1 + x))


sin = unary("Sin", np.sin, TRAINABLE, lambda x, y: cos(x))


cos = unary("Cos", np.cos, TRAINABLE, lambda x, y: -sin(x))


tan = unary("Tan", np.tan, TRAINABLE, lambda x, y: 1 + square(y))


asin = unary("Asin", np.arcsin, TRAINABLE, lambda x, y: rsqrt(1 - square(x)))


acos = unary("Acos", np.arccos, TRAINABLE, lambda x, y: -rsqrt(1 - square(x)))


atan = unary("Atan", np.arctan, TRAINABLE, lambda x, y: reciprocal(1 + square(x)))


sinh = unary("Sinh", np.sinh, TRAINABLE, lambda x, y: cosh(x))


cosh = unary("Cosh", np.cosh, TRAINABLE, lambda x, y: sinh(x))


asinh = unary("Asinh", np.arcsinh, TRAINABLE, lambda x, y: reciprocal(cosh(y)))


acosh = unary("Acosh", np.arccosh, TRAINABLE, lambda x, y: reciprocal(sinh(y)))


atanh = unary("Atanh", np.arctanh, TRAINABLE, lambda x, y: reciprocal(1 - square(x)))


erf = unary("Erf", special.erf, FLOATING,
             lambda x, y: _TWO_OVER_SQRT_PI * exp(-square(x)))


erfc = unary("Erfc", special.erfc, FLOATING,
              lambda x, y: -_TWO_OVER_SQRT_PI * exp(-square(x)))


erfinv = unary("Erfinv", special.erfinv, FLOATING,
                lambda x, y: _SQRT_PI_OVER_TWO * exp(square(y)))


ndtri = unary("Ndtri", special.ndtri, FLOATING,
               lambda x, y: _SQRT_TWO_PI * exp(square(y) / 2))


lgamma = unary("Lgamma", special.gammaln, FLOATING, lambda x, y: digamma(x))


digamma = unary("Digamma", _digamma_kernel, FLOATING, lambda x, y: polygamma(1, x))


_softplus = unary("Softplus", lambda x: np.logaddexp(0, x), FLOATING,
                   lambda x, y: sigmoid(x))


_softsign = unary("Softsign", lambda x: x / (1 + np.abs(x)), FLOATING,
                   lambda x, y: reciprocal(square(1 + _abs(x))))


_abs = unary("Abs", np.abs, _REAL_SIGNED, lambda x, y: sign(x))


# Sign, like TensorFlow's, passes back zeros; rounding ops pass back nothing.
_sign = unary("Sign", np.sign, _REAL_SIGNED,
               gradient=lambda op, grad: zeros_like(op.inputs[0]))


floor = unary("Floor", np.floor, FLOATING)


ceil = unary("Ceil", np.ceil, FLOATING)


rint = unary("Rint", np.rint, FLOATING)


_round = unary("Round", np.round, FLOATING)  # NumPy, like TF, rounds half to even


is_nan = unary("IsNan", np.isnan, FLOATING, result_dtype=to_bool)


is_inf = unary("IsInf", np.isinf, FLOATING, result_dtype=to_bool)


is_finite = unary("IsFinite", np.isfinite, FLOATING, result_dtype=to_bool)


logical_not = unary("LogicalNot", np.logical_not, (dtypes.bool,))


@constructor("Softplus", "features", single_op=False)
def softplus(features, name: Optional[str] = None) -> Tensor:
    """``log(1 + exp(features))``, computed without overflow."""
    return _softplus(features, name=name)


@constructor("Softsign", "features", single_op=False)
def softsign(features, name: Optional[str] = None) -> Tensor:
    """``features / (1 + |features|)``."""
    return _softsign(features, name=name)


@constructor("Sign", "x", single_op=False)
def sign(x, name: Optional[str] = None) -> Tensor:
    """-1, 0 or 1 by the sign of ``x``; for complex ``x``, ``x / |x|`` (0 at 0).

    As in TensorFlow, the real sign passes back a zero gradient while the complex one is
    composed of differentiable ops.
    """
    x = convert_to_tensor(x, name="x")
    if not x.dtype.is_complex:
        return _sign(x, name=name)
    with name_scope(name, "Sign", [x]):
        return div_no_nan(x, cast(abs(x), x.dtype))


@constructor("Round", "x", single_op=False)
def round(x, name: Optional[str] = None) -> Tensor:  # noqa: A001 - TF's public name
    """Rounds half to even (banker's rounding); integer tensors are returned as they are."""
    x = convert_to_tensor(x, name="x")
    return x if x.dtype.is_integer else _round(x, name=name)


# ------------------------------------------------- tanh and sigmoid: fused gradients
def _fused_grad_op(op_type: str, kernel: Callable, gradient: Callable) -> None:
    """A ``XxxGrad(y, dy)`` op: one op per backward step instead of a chain of three."""
    define_op(op_type, infer=lambda inputs, attrs: [(inputs[1].dtype, inputs[1].shape)],
              kernel=kernel)
    RegisterGradient(op_type)(gradient)


def _tanh_grad_grad(op, grad):
    """TanhGrad(a, b) = b (1 - a^2): d/da = -2ab, d/db = 1 - a^2."""
    a, b = op.inputs
    return (scalar_mul(-2, grad) * conj(a) * conj(b),
            apply_op("TanhGrad", [conj(a), grad], name="TanhGrad"))


def _sigmoid_grad_grad(op, grad):
    """SigmoidGrad(a, b) = b a (1 - a): d/da = b (1 - 2a), d/db = a (1 - a)."""
    a, b = op.inputs
    return (grad * conj(b) * (1 - 2 * conj(a)),
            apply_op("SigmoidGrad", [conj(a), grad], name="SigmoidGrad"))


_fused_grad_op("TanhGrad", lambda a, b: b * (1 - a * a), _tanh_grad_grad)


_fused_grad_op("SigmoidGrad", lambda a, b: b * a * (1 - a), _sigmoid_grad_grad)


tanh = unary("Tanh", np.tanh, TRAINABLE, gradient=lambda op, grad: apply_op(
    "TanhGrad", [conj(op.outputs[0]), grad], name="TanhGrad"))


sigmoid = unary("Sigmoid", _sigmoid_kernel, TRAINABLE, gradient=lambda op, grad: apply_op(
    "SigmoidGrad", [conj(op.outputs[0]), grad], name="SigmoidGrad"))


# ----------------------------------------------------------------- complex numbers
def _complex_abs_grad(op, grad):
    """grad * z / |z|, zero where z is zero."""
    z = op.inputs[0]
    return div_no_nan(cast(grad, z.dtype) * z, cast(op.outputs[0], z.dtype))


def _angle_grad(op, grad):
    """d angle(a + ib) = (-b da + a db) / |z|^2, i.e. -grad / (b + ia)."""
    z = op.inputs[0]
    return -cast(grad, z.dtype) * reciprocal(complex(imag(z), real(z)))


_complex_abs = unary("ComplexAbs", np.abs, COMPLEX, gradient=_complex_abs_grad,
                      result_dtype=_real_part)


_real = unary("Real", np.real, COMPLEX, result_dtype=_real_part,
               gradient=lambda op, grad: complex(grad, zeros_like(grad)))


_imag = unary("Imag", np.imag, COMPLEX, result_dtype=_real_part,
               gradient=lambda op, grad: complex(zeros_like(grad), grad))


_angle = unary("Angle", np.angle, COMPLEX, gradient=_angle_grad, result_dtype=_real_part)


@constructor("Abs", "x", single_op=False)
def abs(x, name: Optional[str] = None) -> Tensor:  # noqa: A001 - TF's public name
    """Elementwise absolute value (the magnitude, a real tensor, for complex ``x``)."""
    x = convert_to_tensor(x, name="x")
    return (_complex_abs if x.dtype.is_complex else _abs)(x, name=name or "Abs")


@constructor("Real", "input", single_op=False)
def real(input, name: Optional[str] = None) -> Tensor:  # noqa: A002 - TF's argument name
    """The real part of a complex tensor; a real tensor is returned as it is."""
    x = convert_to_tensor(input, name="input")
    return _real(x, name=name) if x.dtype.is_complex else x


@constructor("Imag", "input", single_op=False)
def imag(input, name: Optional[str] = None) -> Tensor:  # noqa: A002 - TF's argument name
    """The imaginary part of a complex tensor; zeros for a real one."""
    x = convert_to_tensor(input, name="input")
    return _imag(x, name=name) if x.dtype.is_complex else zeros_like(x, name=name)


@constructor("Angle", "input", single_op=False)
def angle(input, name: Optional[str] = None) -> Tensor:  # noqa: A002 - TF's argument name
    """The argument of a complex tensor; for a real one, pi where negative, else 0."""
    x = convert_to_tensor(input, name="input")
    if x.dtype.is_complex:
        return _angle(x, name=name)
    check_dtype_in(x, FLOATING, "Angle", "input")
    with name_scope(name, "Angle", [x]):
        return where_v2(x < 0, np.pi * ones_like(x), zeros_like(x))


def _infer_complex(inputs, attrs):
    re, im = inputs
    result = {dtypes.float32: dtypes.complex64, dtypes.float64: dtypes.complex128}
    if re.dtype is not im.dtype or re.dtype not in result:
        raise TypeError(f"The `real` and `imag` components have incorrect types: "
                        f"{re.dtype.name} ({re.name}) and {im.dtype.name} ({im.name}). They "
                        f"must be consistent, and one of [float32, float64]")
    return [(result[re.dtype], broadcast_shape(re.shape, im.shape, f"{re.name} and {im.name}"))]


def _complex_kernel(re, im):
    # Assigning the parts (not re + 1j * im) keeps infinite parts from becoming nan.
    out = np.empty(np.broadcast_shapes(re.shape, im.shape),
                   np.complex64 if re.dtype == np.float32 else np.complex128)
    out.real, out.imag = re, im
    return out


define_op("Complex", infer=_infer_complex, kernel=_complex_kernel)


@RegisterGradient("Complex")
def _complex_grad(op, grad):
    return binary_grads(op, lambda: real(grad), lambda: imag(grad))


@constructor("Complex", "real", "imag", single_op=False)
def complex(real, imag, name: Optional[str] = None) -> Tensor:  # noqa: A001 - TF's name
    """The complex tensor ``real + i imag`` (float32 gives complex64, float64 complex128)."""
    re, im = binary_operands(real, imag, "Complex")
    return apply_op("Complex", [re, im], name=name or "Complex")


def _truncate_divide(x, y):
    if x.dtype.kind not in "iu":
        return np.trunc(x / y)
    quotient = np.floor_divide(x, y)
    # floor and truncation differ where the division is inexact and the signs differ
    return quotient + ((np.remainder(x, y) != 0) & ((x < 0) != (y < 0)))


def _squared_difference_kernel(x, y):
    d = x - y
    return d * np.conj(d) if d.dtype.kind == "c" else d * d


def _div_no_nan_kernel(x, y):
    zero = y == 0
    return np.where(zero, 0, x / np.where(zero, 1, y))


def _polygamma_kernel(a, x):
    """nan where the order ``a`` is not a non-negative integer, as in TensorFlow."""
    valid = (a >= 0) & (a == np.floor(a))
    return np.where(valid, special.polygamma(np.where(valid, a, 0).astype(np.int64), x), np.nan)


def _zero_where_zero(fn: Callable, operand: int) -> Callable:
    """``fn(x, y)``, but exactly 0 where input ``operand`` is 0, even if ``fn`` is inf or
    nan there (MulNoNan: y; Xlogy, Xdivy: x)."""
    def kernel(x, y):
        return np.where((x, y)[operand] == 0, 0, fn(x, y))
    return elementwise_kernel(kernel)


_SQUARED_DIFFERENCE_TYPES = FLOATING + (dtypes.int32, dtypes.int64) + COMPLEX


realdiv = binary("RealDiv", elementwise_kernel(np.true_divide), "truediv", TRAINABLE)


div_no_nan = binary("DivNoNan", elementwise_kernel(_div_no_nan_kernel), "div_no_nan",
                     TRAINABLE)


floormod = binary("FloorMod", integer_division(np.mod), "mod", REAL_NUMERIC)


truncatediv = binary("TruncateDiv", integer_division(_truncate_divide), "truncatediv",
                      REAL_NUMERIC)


truncatemod = binary("TruncateMod", integer_division(np.fmod), "truncatemod", REAL_NUMERIC)


pow = binary("Pow", elementwise_kernel(np.power), "Pow", _SIGNED)  # noqa: A001 - TF's name


squared_difference = binary("SquaredDifference",
                             elementwise_kernel(_squared_difference_kernel),
                             "SquaredDifference", _SQUARED_DIFFERENCE_TYPES)


_atan2 = binary("Atan2", np.arctan2, "Atan2", FLOATING)


multiply_no_nan = binary("MulNoNan", _zero_where_zero(np.multiply, 1), "MulNoNan",
                          TRAINABLE)


xlogy = binary("Xlogy", _zero_where_zero(lambda x, y: x * np.log(y), 0), "Xlogy", TRAINABLE)


xdivy = binary("Xdivy", _zero_where_zero(np.true_divide, 0), "Xdivy", TRAINABLE)


_polygamma = binary("Polygamma", elementwise_kernel(_polygamma_kernel), "Polygamma",
                     (dtypes.float32, dtypes.float64))


less = binary("Less", np.less, "Less", REAL_NUMERIC, to_bool)


greater = binary("Greater", np.greater, "Greater", REAL_NUMERIC, to_bool)


equal = binary("Equal", np.equal, "Equal", _ALL_TYPES, to_bool)


not_equal = binary("NotEqual", np.not_equal, "NotEqual", _ALL_TYPES, to_bool)


logical_and = binary("LogicalAnd", np.logical_and, "LogicalAnd", (dtypes.bool,))


logical_or = binary("LogicalOr", np.logical_or, "LogicalOr", (dtypes.bool,))


mod = floormod


floor_div = floordiv


# Comparisons, logic and the integer-valued divisions have no gradient (as in TF).
for _op_type in ("Less", "LessEqual", "Greater", "GreaterEqual", "Equal", "NotEqual",
                 "LogicalAnd", "LogicalOr", "FloorDiv", "TruncateDiv"):
    NotDifferentiable(_op_type)


@constructor("Atan2", "y", "x", single_op=False)
def atan2(y, x, name: Optional[str] = None) -> Tensor:
    """The angle of the point (x, y): ``arctan(y / x)`` in the right quadrant."""
    return _atan2(y, x, name=name)


@constructor("Polygamma", "a", "x", single_op=False)
def polygamma(a, x, name: Optional[str] = None) -> Tensor:
    """The ``a``-th derivative of digamma at ``x`` (``a`` a non-negative integer value)."""
    return _polygamma(a, x, name=name)


@constructor("LogicalXor", "x", "y", single_op=False)
def logical_xor(x, y, name: str = "LogicalXor") -> Tensor:
    return logical_and(logical_or(x, y), logical_not(logical_and(x, y)), name=name)


@constructor("truediv", "x", "y", single_op=False)
def truediv(x, y, name: Optional[str] = None) -> Tensor:
    """``x / y``; integer operands are first cast to floating point, as in TF1."""
    x, y = binary_operands(x, y, "RealDiv")
    if x.dtype.is_integer:
        target = dtypes.float32 if x.dtype.size <= 2 else dtypes.float64
        x, y = cast(x, target), cast(y, target)
    return realdiv(x, y, name=name or "truediv")


@constructor("truediv", "x", "y", single_op=False)
def divide(x, y, name: Optional[str] = None) -> Tensor:
    return truediv(x, y, name=name or "truediv")


@constructor("div", "x", "y", single_op=False)
def div(x, y, name: Optional[str] = None) -> Tensor:
    """TF1 ``div``: floor division for integers, true division for floats."""
    x, y = binary_operands(x, y, "Div")
    if x.dtype.is_integer:
        return floordiv(x, y, name=name or "div")
    return realdiv(x, y, name=name or "div")


@constructor("clip_by_value", "t", "clip_value_min", "clip_value_max", single_op=False)
def clip_by_value(t, clip_value_min, clip_value_max, name: Optional[str] = None) -> Tensor:
    """``t`` clipped to [clip_value_min, clip_value_max]; no gradient reaches ``t`` where
    it was clipped. The bounds may not broadcast ``t`` to a larger shape."""
    with graph_for([t, clip_value_min, clip_value_max]).atomic(), \
            name_scope(name, "clip_by_value", [t, clip_value_min, clip_value_max]) as scope:
        values = convert_to_tensor(t, name="t")
        clipped = maximum(minimum(values, clip_value_max), clip_value_min, name=scope)
        if not values.shape.is_compatible_with(clipped.shape):
            raise ValueError(f"clip_by_value: the bounds would broadcast {values.name} of "
                             f"shape {values.shape} to shape {clipped.shape}")
        return clipped


@constructor("reciprocal_no_nan", "x", single_op=False)
def reciprocal_no_nan(x, name: Optional[str] = None) -> Tensor:
    """``1 / x``, and 0 where ``x`` is 0."""
    x = convert_to_tensor(x, name="x")
    with name_scope(name, "reciprocal_no_nan", [x]) as scope:
        return div_no_nan(1, x, name=scope)


@constructor("LogSigmoid", "x", single_op=False)
def log_sigmoid(x, name: Optional[str] = None) -> Tensor:
    """``log(sigmoid(x))`` as ``-softplus(-x)``: finite for large negative ``x``."""
    x = convert_to_tensor(x, name="x")
    with name_scope(name, "LogSigmoid", [x]) as scope:
        return negative(softplus(-x), name=scope)


@constructor("mul", "scalar", "x", single_op=False)
def scalar_mul(scalar, x, name: Optional[str] = None):
    """``scalar * x`` for a 0-d ``scalar``; ``x`` may be IndexedSlices (scales the values)."""
    if isinstance(x, IndexedSlices):
        return IndexedSlices(scalar_mul(scalar, x.values, name), x.indices, x.dense_shape)
    x = convert_to_tensor(x, name="x")
    factor = as_tensor(scalar, dtype=None if isinstance(scalar, Tensor) else x.dtype,
                       name="scalar", like=x)
    if factor.shape.ndims != 0:
        raise ValueError(f"Only scalar multiply works, got shape {factor.shape} "
                         f"({factor.name})")
    return multiply(factor, x, name=name or "mul")


def real_grad(grad: Tensor) -> Tensor:
    """The part of ``grad`` that acts on a real-valued output stored as complex numbers:
    its imaginary part meets an output whose imaginary part never changes."""
    return cast(real(grad), grad.dtype) if grad.dtype.is_complex else grad


@RegisterGradient("RealDiv")
def _realdiv_grad(op, grad):
    x, y = op.inputs
    return binary_grads(op, lambda: realdiv(grad, conj(y)),
                         lambda: grad * conj(realdiv(realdiv(-x, y), y)))


@RegisterGradient("DivNoNan")
def _div_no_nan_grad(op, grad):
    x, y = op.inputs
    return binary_grads(op, lambda: div_no_nan(grad, conj(y)),
                         lambda: grad * conj(div_no_nan(div_no_nan(-x, y), y)))


@RegisterGradient("FloorMod")
def _floormod_grad(op, grad):
    x, y = op.inputs
    return binary_grads(op, lambda: grad, lambda: grad * -floordiv(x, y))


@RegisterGradient("TruncateMod")
def _truncatemod_grad(op, grad):
    x, y = op.inputs
    return binary_grads(op, lambda: grad, lambda: grad * -truncatediv(x, y))


@RegisterGradient("Pow")
def _pow_grad(op, grad):
    """d(x^y) = y x^(y-1) dx + x^y log(x) dy, taking log(x) as 0 where it is not defined
    (x = 0, and real x < 0) so that neither term is nan there."""
    x, y = op.inputs

    def grad_y():
        defined = not_equal(x, 0) if x.dtype.is_complex else greater(x, 0)
        safe_x = where_v2(defined, x, ones_like(x))
        log_x = where_v2(defined, log(safe_x), zeros_like(x))
        return grad * conj(op.outputs[0] * log_x)

    return binary_grads(op, lambda: grad * conj(y * pow(x, y - 1)), grad_y)


@RegisterGradient("SquaredDifference")
def _squared_difference_grad(op, grad):
    x, y = op.inputs
    dx = scalar_mul(2, real_grad(grad)) * (x - y)
    return binary_grads(op, lambda: dx, lambda: -dx)


@RegisterGradient("Atan2")
def _atan2_grad(op, grad):
    """atan2(y, x): d/dy = x / (x^2 + y^2), d/dx = -y / (x^2 + y^2)."""
    y, x = op.inputs
    scaled = grad / (square(x) + square(y))
    return binary_grads(op, lambda: x * scaled, lambda: -y * scaled)


@RegisterGradient("MulNoNan")
def _mul_no_nan_grad(op, grad):
    x, y = op.inputs
    return binary_grads(op, lambda: multiply_no_nan(grad, conj(y)),
                         lambda: multiply_no_nan(conj(x), grad))


def _indicator_of_nonzero(x: Tensor) -> Tensor:
    return cast(not_equal(x, 0), x.dtype)


@RegisterGradient("Xlogy")
def _xlogy_grad(op, grad):
    """d/dx = log y (0 where x = 0), d/dy = x / y (0 where x = 0)."""
    x, y = op.inputs
    return binary_grads(op, lambda: grad * conj(xlogy(_indicator_of_nonzero(x), y)),
                         lambda: grad * conj(xdivy(x, y)))


@RegisterGradient("Xdivy")
def _xdivy_grad(op, grad):
    """d/dx = 1 / y (0 where x = 0), d/dy = -x / y^2 (0 where x = 0)."""
    x, y = op.inputs
    return binary_grads(op, lambda: grad * conj(xdivy(_indicator_of_nonzero(x), y)),
                         lambda: grad * conj(xdivy(-x, square(y))))


@RegisterGradient("Polygamma")
def _polygamma_grad(op, grad):
    """Only ``x`` has a gradient: the derivative in the order ``a`` is not defined."""
    a, x = op.inputs
    return binary_grads(op, None, lambda: grad * polygamma(a + 1, x))


# ------------------------------------------------------------------------ selection
def _check_select_operands(cond: Tensor, x: Tensor, y: Tensor) -> None:
    if cond.dtype is not dtypes.bool:
        raise TypeError(f"condition of where/select must be bool, got {cond.dtype.name} "
                        f"({cond.name})")
    if x.dtype is not y.dtype:
        raise TypeError(f"x and y of where/select must have one dtype, got {x.dtype.name} "
                        f"({x.name}) and {y.dtype.name} ({y.name})")


def _infer_select(inputs, attrs):
    """TF1 ``Select``: x and y of one shape; the condition a scalar, of that shape, or a
    vector along their first dimension."""
    cond, x, y = inputs
    _check_select_operands(cond, x, y)
    if not x.shape.is_compatible_with(y.shape):
        raise ValueError(f"x and y of where/select must have the same shape, got {x.shape} "
                         f"({x.name}) and {y.shape} ({y.name}); where_v2 broadcasts them")
    shape = x.shape.merge_with(y.shape)
    c = cond.shape
    along_rows = c.ndims == 1 and shape.ndims is not None and shape.ndims > 1
    if c.ndims != 0 and not c.is_compatible_with(shape[:1] if along_rows else shape):
        raise ValueError(f"condition {cond.name} of where/select has shape {c}; it must be a "
                         f"scalar, have the shape {shape} of x and y, or be a vector as long "
                         f"as their first dimension")
    if c.ndims != 0 and not along_rows:
        shape = shape.merge_with(c)
    return [(x.dtype, shape)]


def _select_kernel(cond, x, y):
    if cond.ndim == 1 and x.ndim > 1:
        cond = cond.reshape((-1,) + (1,) * (x.ndim - 1))
    return np.where(cond, x, y)


define_op("Select", infer=_infer_select, kernel=_select_kernel)


@RegisterGradient("Select")
def _select_grad(op, grad):
    cond, x, y = op.inputs
    zeros = zeros_like(grad)
    dx = apply_op("Select", [cond, grad, zeros], name="Select") if gradient_needed(x) else None
    dy = apply_op("Select", [cond, zeros, grad], name="Select") if gradient_needed(y) else None
    return None, dx, dy


def _infer_select_v2(inputs, attrs):
    cond, x, y = inputs
    _check_select_operands(cond, x, y)
    out = broadcast_shape(broadcast_shape(cond.shape, x.shape), y.shape,
                          f"where_v2({cond.name}, {x.name}, {y.name})")
    return [(x.dtype, out)]


define_op("SelectV2", infer=_infer_select_v2, kernel=np.where)


@RegisterGradient("SelectV2")
def _select_v2_grad(op, grad):
    cond, x, y = op.inputs
    zeros = zeros_like(grad)
    dx = reduce_to_shape_of(where_v2(cond, grad, zeros), x) if gradient_needed(x) else None
    dy = reduce_to_shape_of(where_v2(cond, zeros, grad), y) if gradient_needed(y) else None
    return None, dx, dy


@constructor("Select", "condition", "x", "y", single_op=False)
def select(condition, x, y, name: Optional[str] = None) -> Tensor:
    """Elementwise ``x if condition else y`` (TF1 shape rule, see :func:`where`)."""
    return branches(condition, x, y, "Select", name)


@constructor("Select", "condition", "x", "y", single_op=False)
def where(condition, x=None, y=None, name: Optional[str] = None) -> Tensor:
    """TF1 ``where``: with only ``condition``, the int64 coordinates of its true elements;
    with ``x`` and ``y``, elementwise selection where x and y have one shape and the
    condition is a scalar, has that shape, or is a vector picking whole rows."""
    check_both_or_neither(x, y)
    if x is None:
        return true_coordinates(condition, name)
    return select(condition, x, y, name=name)
